// The subcommands behind `salt`. Each lives in its own file in lib/cli/.
#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace salt::cli {

// fit / test / validate / predict: compose the config, then run.
int run_config_command(const std::string& command, const std::vector<std::string>& args);

// Subcommands with ordinary flags (e.g. toy data generation), registered on `app`.
void add_tool_commands(CLI::App& app);

// to_onnx / get_onnx_metadata / compare_models (lib/cli/export_commands.cpp).
void add_export_commands(CLI::App& app);

// submit_slurm / submit_htcondor (lib/cli/submit_commands.cpp).
void add_submit_commands(CLI::App& app);

}  // namespace salt::cli
