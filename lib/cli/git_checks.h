// The reproducibility checks `salt fit` runs before writing anything (not under
// fast_dev_run): the git repository of the working directory must be clean
// unless --force (then the uncommitted changes are saved as
// <run>/uncommitted.patch); --tag tags HEAD with the run's name and pushes it.
#pragma once
#include <yaml-cpp/yaml.h>

#include <filesystem>

namespace salt::cli {

struct GitCheckOptions {
  bool force = false;
  bool tag = false;
  std::string remote = "origin";
  std::filesystem::path logs_root;  // excluded from the check and the patch
};

// Returns the metadata keys git_repo, git_commit, git_branch, git_dirty.
YAML::Node check_git_and_tag(const std::filesystem::path& run_dir, const GitCheckOptions& options);

}  // namespace salt::cli
