// salt's run directories: <default_root_dir>/<name>_<YYYYmmdd-THHMMSS>, or
// <name>_<log_suffix>. A root whose basename already ends in such a timestamp
// (the saved default_root_dir of a run being resumed) is replaced by its parent;
// so is a root that holds a config.yaml (a run directory named by log_suffix).
//
// A run claims its directory before anything is written (RunDirClaim): a
// timestamped name is created exclusively (a run that loses the race for the same
// second takes <name>_<timestamp>_2, _3, ...), and the directory stays locked
// (flock) while the run lives, so a second run with the same explicit log_suffix
// is refused instead of mixing its files into the first's.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace salt::training {

std::string timestamp_now();  // local time, YYYYmmdd-THHMMSS
bool ends_with_timestamp(const std::string& name);

std::filesystem::path run_directory(const std::filesystem::path& default_root_dir, const std::string& name,
                                    const std::optional<std::string>& log_suffix, const std::string& timestamp);

class RunDirClaim {
 public:
  // Claims run_directory(...) for this process: creates it (exclusively for a
  // timestamped name), locks it, and refuses an existing config.yaml unless
  // overwrite_config. UsageError when another live run holds it.
  RunDirClaim(const std::filesystem::path& default_root_dir, const std::string& name,
              const std::optional<std::string>& log_suffix, const std::string& timestamp, bool overwrite_config);
  ~RunDirClaim();  // releases the lock (the directory stays)
  RunDirClaim(const RunDirClaim&) = delete;
  RunDirClaim& operator=(const RunDirClaim&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  bool created() const { return created_; }  // this run made the directory (so a failed start removes it)
  // The missing ancestors this claim created on the way (default_root_dir...), deepest first.
  const std::vector<std::filesystem::path>& created_parents() const { return created_parents_; }

 private:
  std::filesystem::path dir_;
  std::vector<std::filesystem::path> created_parents_;
  bool created_ = false;
  int lock_fd_ = -1;
};

}  // namespace salt::training
