// The git part of a run's metadata.yaml.
#pragma once
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "repro/git_state.h"

namespace salt::repro {

struct GitInfo {
  std::optional<std::string> repo_path;  // top of the working tree; nullopt: not in a repository
  std::optional<std::string> commit;     // full HEAD id; nullopt: no repository or no commit yet
  std::optional<std::string> branch;     // nullopt: detached HEAD or no repository
  bool dirty = false;
};

// From an inspected repository, or all-null when there is none.
GitInfo git_info(const std::optional<RepoState>& state);

// {git_repo, git_commit, git_branch, git_dirty}; absent values are YAML nulls,
// and git_dirty is null too when there is no repository (unknown, not "clean").
YAML::Node git_info_yaml(const GitInfo& info);

// Adds those four keys to a metadata map (salt's own `salt_hash` key is the
// caller's: it is the same commit).
void add_git_info(YAML::Node& metadata, const GitInfo& info);

}  // namespace salt::repro
