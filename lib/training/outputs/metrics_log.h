// <run>/metrics.csv, Lightning CSVLogger-style: one row per logged step or epoch,
// columns `epoch`, `step`, then every metric seen so far (empty where a row has
// none). The file is rewritten atomically on every flush, so it is always
// complete and readable while training runs.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace salt::training {

class MetricsLog {
 public:
  explicit MetricsLog(std::filesystem::path path) : path_(std::move(path)) {}
  void log(int64_t epoch, int64_t step, const std::map<std::string, double>& metrics);
  void flush() const;
  // Keeps the rows of an existing file (a run resumed in its own directory).
  void load_existing();
  const std::vector<std::string>& columns() const { return columns_; }

 private:
  struct Row {
    int64_t epoch, step;
    std::map<std::string, double> values;
  };
  std::filesystem::path path_;
  std::vector<std::string> columns_;
  std::vector<Row> rows_;
};

}  // namespace salt::training
