#include "training/metrics_log.h"

#include <algorithm>
#include <sstream>

#include "core/atomic_file.h"

namespace salt::training {

void MetricsLog::log(int64_t epoch, int64_t step, const std::map<std::string, double>& metrics) {
  for (const auto& [name, value] : metrics)
    if (std::find(columns_.begin(), columns_.end(), name) == columns_.end()) columns_.push_back(name);
  rows_.push_back({epoch, step, metrics});
}

void MetricsLog::flush() const {
  if (path_.empty()) return;
  std::ostringstream out;
  out.precision(8);
  out << "epoch,step";
  for (const auto& c : columns_) out << "," << c;
  out << "\n";
  for (const auto& row : rows_) {
    out << row.epoch << "," << row.step;
    for (const auto& c : columns_) {
      out << ",";
      auto it = row.values.find(c);
      if (it != row.values.end()) out << it->second;
    }
    out << "\n";
  }
  write_file_atomic(path_, out.str());
}

}  // namespace salt::training
