#include "cli/git_checks.h"

#include <spdlog/spdlog.h>

#include "core/atomic_file.h"
#include "repro/dirty_check.h"
#include "repro/git_info.h"
#include "repro/git_state.h"
#include "repro/patch.h"
#include "repro/repository.h"
#include "repro/tag.h"

namespace salt::cli {
namespace fs = std::filesystem;

YAML::Node check_git_and_tag(const fs::path& run_dir, const GitCheckOptions& options) {
  auto repo = repro::Repository::discover(fs::current_path());
  std::optional<repro::RepoState> state;
  const auto exclude = repro::salt_output_dirs(options.logs_root, fs::current_path());
  if (!repo) {
    spdlog::warn("{} is not inside a git repository: the run records no commit", fs::current_path().string());
  } else {
    state = repro::read_state(*repo, exclude);
    if (!options.force) repro::refuse_if_dirty(*state);
  }
  if (options.force && state && state->is_dirty()) {
    create_directories_or_fail(run_dir, "run directory (trainer.default_root_dir)");
    repro::PatchOptions patch_options;
    patch_options.exclude = exclude;
    if (auto saved = repro::save_uncommitted_patch(*repo, run_dir, patch_options)) {
      spdlog::warn("running with uncommitted changes (--force); they are saved in {}", saved->path.string());
      for (const auto& omitted : saved->omitted) spdlog::warn("left out of the patch (too large): {}", omitted);
    }
  }
  if (options.tag) {
    if (options.force) {
      spdlog::warn("--tag has no effect with --force (as in salt): no tag is created");
    } else if (repo) {
      repro::TagOptions tag_options;
      tag_options.remote = options.remote;
      auto result = repro::tag_and_push(*repo, repro::tag_name_for_run(run_dir), tag_options);
      spdlog::info("tagged {} as {} and pushed it to {}", result.commit, result.name, result.remote_url);
    }
  }
  return repro::git_info_yaml(repro::git_info(state));
}

}  // namespace salt::cli
