// `salt test`: runs a checkpoint over data.test_file, writes salt's prediction
// file next to the checkpoint and prints the b-tagging performance table.
#pragma once
#include <yaml-cpp/yaml.h>

#include "config/compose.h"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "training/outputs/performance.h"
#include "training/step/step_options.h"

namespace salt::training {

struct EvaluateResult {
  std::filesystem::path checkpoint;
  std::filesystem::path output;  // empty when no PredictionWriter callback is configured
  std::map<std::string, double> metrics;  // "test/loss", "test/<task>_loss": jet-weighted means, as validation's
  std::optional<Performance> performance;
  std::vector<std::filesystem::path> plots;  // rejection curves next to `output`, loss curves in the run
};

// `switches`: the command's StepOptions (the batches' transfer, the model's kernels).
EvaluateResult evaluate(const config::ResolvedConfig& resolved, const StepOptions& switches = {});

// `salt validate`: the validation losses of a checkpoint on data.val_file
// (num_val rows, limit_val_batches), printed and returned as val/<...> metrics.
std::map<std::string, double> validate_checkpoint(const config::ResolvedConfig& resolved,
                                                  const StepOptions& switches = {});

// The checkpoint with the lowest `loss=` value in `ckpt_dir` (salt's rule).
std::filesystem::path best_checkpoint(const std::filesystem::path& ckpt_dir);

// `pp_output_test_ttbar.h5` -> "ttbar": the 4th `_` token when the stem has
// exactly 4, else the whole stem (salt's rule).
std::string sample_name(const std::filesystem::path& test_file);

}  // namespace salt::training
