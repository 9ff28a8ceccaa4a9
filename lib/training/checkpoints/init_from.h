// Fine-tuning's start (config::InitFrom, docs/training.md): a freshly built model
// takes another run's weights, all or those the patterns pick, and some of its
// parameters are frozen. The optimizer and schedule start new.
#pragma once
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "config/run_config.h"

namespace salt::training {

struct TakenWeights {
  int64_t tensors = 0;  // state tensors copied from the checkpoint
  int64_t values = 0;   // their elements
  std::vector<std::string> left;  // the model's state keys left at their initial values
};

// Copies the tensors `init` selects from `saved` (a checkpoint's state_dict) into
// `model`. A selected key the checkpoint lacks, or of another shape, is an
// InputError naming it and `source`; a pattern that selects nothing is a UsageError.
TakenWeights take_weights(torch::nn::Module& model, const std::vector<std::pair<std::string, torch::Tensor>>& saved,
                          const config::InitFrom& init, const std::string& source);

struct FrozenParameters {
  std::vector<std::string> names;
  int64_t values = 0;
};

// Turns off requires_grad of every parameter a pattern finds (before the optimizer
// and the gradient sync are made, so neither gives them state). A pattern that
// finds no parameter is a UsageError naming it.
FrozenParameters freeze_parameters(torch::nn::Module& model, const std::vector<std::string>& patterns);

// init_from.freeze as a run's resolved config records it (a salt-cpp checkpoint's
// salt_cpp.config); empty when it has none.
std::vector<std::string> recorded_freeze(const std::string& config_yaml);

}  // namespace salt::training
