#include "repro/git_info.h"

namespace salt::repro {

GitInfo git_info(const std::optional<RepoState>& state) {
  GitInfo info;
  if (!state) return info;
  info.repo_path = state->workdir.string();
  info.commit = state->commit;
  info.branch = state->branch;
  info.dirty = state->is_dirty();
  return info;
}

namespace {
YAML::Node optional_node(const std::optional<std::string>& v) {
  return v ? YAML::Node(*v) : YAML::Node(YAML::NodeType::Null);
}
}  // namespace

YAML::Node git_info_yaml(const GitInfo& info) {
  YAML::Node node(YAML::NodeType::Map);
  add_git_info(node, info);
  return node;
}

void add_git_info(YAML::Node& metadata, const GitInfo& info) {
  metadata["git_repo"] = optional_node(info.repo_path);
  metadata["git_commit"] = optional_node(info.commit);
  metadata["git_branch"] = optional_node(info.branch);
  metadata["git_dirty"] = info.repo_path ? YAML::Node(info.dirty) : YAML::Node(YAML::NodeType::Null);
}

}  // namespace salt::repro
