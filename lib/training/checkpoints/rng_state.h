// The state of torch's default generators (weight init, dropout): the CPU one
// is saved in checkpoints so that a resumed run draws the same numbers as an
// uninterrupted one; a tuner's trial saves and restores the device's as well.
#pragma once
#include <torch/torch.h>

namespace salt::training {
torch::Tensor cpu_rng_state();
void set_cpu_rng_state(const torch::Tensor &state);
// Throws std::invalid_argument naming `what` unless `state` is one LibTorch's
// CPU generator takes (a checkpoint's, read before anything else of the run
// changes).
void check_cpu_rng_state(const torch::Tensor &state, const std::string &what);

// The default generators a run draws from on `device`: the CPU's, plus the
// device's own on CUDA. Restoring them makes later draws as if nothing had
// drawn.
struct RngSnapshot {
  explicit RngSnapshot(const torch::Device &device);
  void restore() const;

 private:
  torch::Device device_;
  torch::Tensor cpu_, device_state_;
};
}  // namespace salt::training
