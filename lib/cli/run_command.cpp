#include <spdlog/spdlog.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/git_checks.h"
#include "config/compose.h"
#include "config/run_args.h"
#include "core/errors.h"
#include "core/signals.h"
#include "training/evaluate.h"
#include "training/fit.h"
#include "training/threads.h"

namespace salt::cli {

int run_config_command(const std::string& command, const std::vector<std::string>& args) {
  auto run = config::parse_run_args(command, args);
  if (run.help) {
    std::cout << config::run_help(command);
    return 0;
  }
  auto resolved = config::resolve(config::find_base_config(), run.ops);
  for (const auto& w : resolved.warnings) spdlog::warn("{}", w);
  if (run.print_config) {
    std::cout << config::to_yaml(resolved.config);
    return 0;
  }
  install_stop_handlers();
  const int threads = training::configure_torch_threads();
  spdlog::info("computing with {} CPU thread(s) (set OMP_NUM_THREADS to change)", threads);
  if (command == "fit") {
    training::FitHooks hooks;
    const auto& c = resolved.config;
    hooks.before_start = [&c](const std::filesystem::path& run_dir) {
      GitCheckOptions git;
      git.force = c["force"].as<bool>();
      git.tag = c["tag"].as<bool>();
      git.logs_root = run_dir.parent_path();
      return check_git_and_tag(run_dir, git);
    };
    auto result = training::fit(resolved.config, hooks);
    if (!result.run_dir.empty()) spdlog::info("finished: {}", result.run_dir.string());
    return 0;
  }
  if (command == "test" || command == "predict") {
    training::evaluate(resolved.config);
    return 0;
  }
  throw UsageError("'salt " + command + "' is not available yet; use 'salt test' to evaluate a checkpoint");
}

}  // namespace salt::cli
