// Gradient clipping by the total 2-norm (trainer.gradient_clip_val with
// gradient_clip_algorithm "norm", Lightning's default): torch's clip_grad_norm_
// arithmetic, op for op, without reading the norm back. LibTorch's C++
// clip_grad_norm_ returns the norm as a double, which makes every step wait for
// the GPU.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace salt::training {

// Scales the defined gradients of `parameters` by min(1, max_norm / (norm + 1e-6)),
// norm the 2-norm of all of them together. Returns that norm as a device tensor
// (undefined when no parameter has a gradient).
torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm);

}  // namespace salt::training
