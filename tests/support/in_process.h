// For tests that run salt's stages in this process (to see components and
// callbacks the test itself registers): a toy data set in a scratch directory
// that is the working directory while the test runs (configs/base.yaml points at
// data/toy relative to it), and composition as `salt fit` does it.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "config/compose.h"
#include "config/run_args.h"
#include "support/test_support.h"

namespace salt::testing {

class InProcessRun {
 public:
  // Writes `salt toydata` (small sizes) into <scratch>/data/toy and cds there.
  InProcessRun(int train = 1000, int val = 300, int test = 300) : previous_(std::filesystem::current_path()) {
    write_toy_data(dir_ / "data/toy", train, val, test);
    std::filesystem::current_path(dir_.path());
  }
  ~InProcessRun() { std::filesystem::current_path(previous_); }
  InProcessRun(const InProcessRun&) = delete;
  InProcessRun& operator=(const InProcessRun&) = delete;

  const std::filesystem::path& dir() const { return dir_.path(); }

  // `salt fit <args>` up to validation: the resolved config (throws UsageError).
  static config::ResolvedConfig resolve(const std::vector<std::string>& args) {
    auto run = config::parse_run_args("fit", args);
    return config::resolve((source_dir() / "configs" / "base.yaml").string(), run.ops);
  }

  static std::string repo_config(const std::string& name) { return (source_dir() / "configs" / name).string(); }

 private:
  TempDir dir_;
  std::filesystem::path previous_;
};

}  // namespace salt::testing
