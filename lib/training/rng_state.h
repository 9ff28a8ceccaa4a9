// The state of torch's default CPU generator (weight init, dropout), saved in
// checkpoints so that a resumed run draws the same numbers as an uninterrupted one.
#pragma once
#include <torch/torch.h>

namespace salt::training {
torch::Tensor cpu_rng_state();
void set_cpu_rng_state(const torch::Tensor& state);
}  // namespace salt::training
