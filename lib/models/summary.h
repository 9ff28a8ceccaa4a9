// A model summary like Lightning's ModelSummary(max_depth=2): one row per module
// down to the given depth, with its parameter count, then the totals.
#pragma once
#include <torch/torch.h>

#include <string>

namespace salt::models {

struct ParamCounts {
  int64_t trainable = 0;
  int64_t non_trainable = 0;
};

ParamCounts count_parameters(const torch::nn::Module& module);

// The text of the table (ends with a newline).
std::string model_summary(const torch::nn::Module& module, int max_depth = 2);

// Lightning's short form: 950, 71.4 K, 2.3 M.
std::string human_count(int64_t n);

}  // namespace salt::models
