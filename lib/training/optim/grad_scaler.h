// Loss scaling for `16-mixed` on CUDA, as torch.amp.GradScaler under Lightning's
// MixedPrecision plugin: float16 gradients underflow without it. The loss is
// multiplied by the scale before backward; before clipping, the gradients are
// divided by it and checked; a step whose gradients hold an inf or NaN is skipped
// (the learning-rate schedule and the step count still advance, as in Lightning)
// and the scale backs off; `growth_interval` finite steps in a row grow it.
// bf16-mixed and 32 need none: bf16 has float32's range.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace salt::training {

// torch's defaults, which Lightning uses; also the checkpoint's
// `native_amp_scaling_state` (GradScaler.state_dict()).
struct GradScalerState {
  double scale = 65536.0;  // 2**16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  int64_t growth_tracker = 0;  // finite steps since the last growth or backoff
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerState state = {}) : state_(state) {}

  // loss * scale (the scale as a float32 tensor on the loss's device, as torch).
  torch::Tensor scale(const torch::Tensor& loss);
  // Divides the defined gradients of `parameters` by the scale (torch multiplies by
  // the float32 of 1 / scale computed in double) and records, on the device,
  // whether any is inf or NaN. Once per optimizer step, before clipping.
  void unscale(const std::vector<torch::Tensor>& parameters);
  // Whether this step's gradients were finite, so the optimizer may step: the one
  // host read of a scaled step, as in torch's GradScaler.step.
  bool gradients_finite();
  // Grows or backs off the scale for the next step; after gradients_finite().
  void update();

  const GradScalerState& state() const { return state_; }

 private:
  GradScalerState state_;
  torch::Tensor scale_tensor_, found_inf_;
  bool finite_ = true;
  bool checked_ = false;
};

}  // namespace salt::training
