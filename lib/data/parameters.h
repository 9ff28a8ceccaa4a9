// salt's parameterised networks: the `parameters` inputs (variables of the global
// object listed in data.variables.parameters) as the model sees them. While fitting
// (training and validation), a value that is not one of the parameter's `train`
// values (background jets) is replaced by one of them drawn at random (with `prob`,
// else uniformly); in `salt test` every jet gets the `test` value.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "config/data_config.h"

namespace salt::data {

// x: float32 [B, P], columns in the order of specs. The draws depend only on seed,
// epoch and first_row (the batch's first row in the file): new each epoch, as salt's,
// but the same in a rerun with the same seed and whatever the loader threads do.
void assign_parameters(torch::Tensor& x, const std::vector<config::ParameterSpec>& specs, bool test_stage,
                       uint64_t seed, int64_t epoch, int64_t first_row);

}  // namespace salt::data
