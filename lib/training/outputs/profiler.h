// Lightning's SimpleProfiler (trainer.profiler: simple, or its class_path): the
// time of each action of a fit (an epoch, a batch's load, forward, backward and
// optimizer step, a validation batch, each callback hook) summed over the run, in
// Lightning's report (mean, calls, total, share of the run), printed at the end
// and written to <dirpath or run>/fit-<filename>.txt. No torch here.
#pragma once
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/trainer_config.h"

namespace salt::training {

using config::ProfilerConfig;

class SimpleProfiler {
 public:
  explicit SimpleProfiler(ProfilerConfig config);

  void record(const std::string& action, double seconds);

  // Times one action while it lives (does nothing for a null profiler).
  class Scope {
   public:
    Scope(SimpleProfiler* p, std::string_view action);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    SimpleProfiler* p_;
    std::string action_;
    std::chrono::steady_clock::time_point start_;
  };

  // Lightning's "FIT Profiler Report" table, actions by their share of the run.
  std::string summary() const;
  // Prints the summary (stderr) and writes it to <dirpath or run_dir>/fit-<filename>.txt
  // (filename null: fit-profiler.txt); returns the file written.
  std::filesystem::path report(const std::filesystem::path& run_dir) const;

 private:
  struct Durations {
    double total = 0;
    int64_t calls = 0;
  };
  ProfilerConfig config_;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::string> order_;  // first-recorded order, for equal shares
  std::map<std::string, Durations> durations_;
};

}  // namespace salt::training
