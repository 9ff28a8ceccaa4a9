#include <spdlog/spdlog.h>

#include <iostream>

#include "cli/commands.h"
#include "config/compose.h"
#include "config/run_args.h"
#include "core/errors.h"

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
  throw UsageError("'salt " + command + "' cannot run yet: training and evaluation are not implemented in this build; "
                   "use --print_config to see the resolved config");
}

}  // namespace salt::cli
