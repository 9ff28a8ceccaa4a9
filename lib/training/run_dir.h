// salt's run directories: <default_root_dir>/<name>_<YYYYmmdd-THHMMSS>, or
// <name>_<log_suffix>. A root whose basename already ends in such a timestamp
// (the saved default_root_dir of a run being resumed) is replaced by its parent;
// so is a root that holds a config.yaml (a run directory named by log_suffix).
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace salt::training {

std::string timestamp_now();  // local time, YYYYmmdd-THHMMSS
bool ends_with_timestamp(const std::string& name);

std::filesystem::path run_directory(const std::filesystem::path& default_root_dir, const std::string& name,
                                    const std::optional<std::string>& log_suffix, const std::string& timestamp);

}  // namespace salt::training
