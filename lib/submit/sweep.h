// Hyper-parameter sweeps as one job array: a YAML file with a `grid` (every
// combination of the listed values) and/or a `list` (explicit runs) of dotted
// config keys. Both together: every list entry is combined with every grid point.
//
//   grid:
//     model.lrs_config.max: [1e-3, 5e-4]
//     data.batch_size: [500, 1000]
//   list:
//     - {trainer.max_epochs: 10}
//     - {trainer.max_epochs: 20, name: long}
#pragma once
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace salt::submit {

// One run's overrides: dotted key -> YAML text of the value, in file order.
using SweepRun = std::vector<std::pair<std::string, std::string>>;

// Runs in order: list entries outermost, then the grid with its first key slowest
// (like itertools.product). `where` names the file in errors. Throws UsageError.
std::vector<SweepRun> expand_sweep(const YAML::Node& sweep, const std::string& where);
std::vector<SweepRun> load_sweep(const std::filesystem::path& file);

// The `salt fit` flags of one run: --key=value.
std::vector<std::string> sweep_flags(const SweepRun& run);

}  // namespace salt::submit
