#include "training/run_dir.h"

#include <ctime>
#include <regex>

namespace salt::training {

std::string timestamp_now() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-T%H%M%S", &local);
  return buf;
}

bool ends_with_timestamp(const std::string& name) {
  static const std::regex pattern(".*_[0-9]{8}-T[0-9]{6}$");
  return std::regex_match(name, pattern);
}

std::filesystem::path run_directory(const std::filesystem::path& default_root_dir, const std::string& name,
                                    const std::optional<std::string>& log_suffix, const std::string& timestamp) {
  auto root = default_root_dir.empty() ? std::filesystem::path("logs") : default_root_dir;
  // Resuming from a run's saved config: its default_root_dir is the run directory itself.
  std::error_code ec;
  if (ends_with_timestamp(root.filename().string()) || std::filesystem::exists(root / "config.yaml", ec))
    root = root.parent_path();
  return root / (name + "_" + (log_suffix ? *log_suffix : timestamp));
}

}  // namespace salt::training
