#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace salt::cli {

// Filled in by the batch-systems work.
void add_submit_commands(CLI::App& app) { (void)app; }

}  // namespace salt::cli
