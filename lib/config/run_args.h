// The arguments of `salt fit|test|validate|predict`: the one place where their
// flags are defined. Every flag that sets a config key becomes an ordered
// ConfigOp, so flags and --config files apply strictly left to right, as in salt.
#pragma once
#include <string>
#include <vector>

#include "config/compose.h"

namespace salt::config {

struct RunArgs {
  std::string command;  // fit, test, validate, predict
  std::vector<ConfigOp> ops;
  bool help = false;
  bool print_config = false;
};

// Parses the tokens after the subcommand. Throws UsageError for a bad token.
RunArgs parse_run_args(const std::string& command, const std::vector<std::string>& args);

// `salt <command> --help`: the flags, then every config key with its type,
// default and help, grouped by section, then every component's init_args.
std::string run_help(const std::string& command);

}  // namespace salt::config
