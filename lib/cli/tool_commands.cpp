#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace salt::cli {

void add_tool_commands(CLI::App& app) { (void)app; }

}  // namespace salt::cli
