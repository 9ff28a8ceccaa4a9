// salt's clean_logs utility (salt/utils/clean_logs.py): deletes every directory
// directly under a folder that has no subdirectory of a given name, e.g. the runs
// under logs/ that never wrote a checkpoint (`--subdirectory ckpts`).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace salt {

struct CleanLogsResult {
  std::vector<std::filesystem::path> deleted;  // in name order
  std::vector<std::filesystem::path> links;    // symbolic links to directories: left alone
};

// InputError when `folder` is not a directory or `subdirectory` is not a plain
// name (empty, ".", "..", or holding '/'); a directory that cannot be removed
// stops with an InputError naming it (the ones before it are gone, as in salt).
CleanLogsResult delete_dirs_without_subdir(const std::filesystem::path& folder, const std::string& subdirectory);

}  // namespace salt
