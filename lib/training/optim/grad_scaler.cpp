#include "training/optim/grad_scaler.h"

#include <cmath>
#include <map>

#include "core/errors.h"

namespace salt::training {

torch::Tensor GradScaler::scale(const torch::Tensor& loss) {
  if (!scale_tensor_.defined() || scale_tensor_.device() != loss.device())
    scale_tensor_ = torch::full({}, state_.scale, torch::TensorOptions().dtype(torch::kFloat32).device(loss.device()));
  return loss * scale_tensor_;
}

void GradScaler::unscale(const std::vector<torch::Tensor>& parameters) {
  torch::NoGradGuard no_grad;
  // torch: inv_scale = scale.double().reciprocal().float()
  const double inverse = static_cast<double>(static_cast<float>(1.0 / static_cast<double>(static_cast<float>(state_.scale))));
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  checked_ = false;
  if (grads.empty()) {
    found_inf_ = torch::Tensor();
    return;
  }
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(grads.front().device());
  found_inf_ = torch::zeros({}, options);
  if (grads.front().is_cuda()) {
    // One multi-tensor kernel per dtype, torch's own (the model lives on one device).
    std::map<c10::ScalarType, std::vector<torch::Tensor>> groups;
    for (auto& g : grads) groups[g.scalar_type()].push_back(g);
    const auto inv = torch::full({}, inverse, options);
    for (auto& [key, group] : groups) at::_amp_foreach_non_finite_check_and_unscale_(group, found_inf_, inv);
    return;
  }
  for (auto& g : grads) {
    found_inf_.logical_or_(g.isfinite().logical_not().any());
    g.mul_(inverse);
  }
}

bool GradScaler::gradients_finite() {
  finite_ = !found_inf_.defined() || found_inf_.item<float>() == 0.0f;
  checked_ = true;
  return finite_;
}

void GradScaler::update() {
  if (!checked_) gradients_finite();
  if (!finite_) {
    state_.scale *= state_.backoff_factor;
    state_.growth_tracker = 0;
  } else if (++state_.growth_tracker == state_.growth_interval) {
    const double grown = state_.scale * state_.growth_factor;
    if (std::isfinite(static_cast<float>(grown))) state_.scale = grown;  // torch keeps a float32 scale
    state_.growth_tracker = 0;
  }
  if (scale_tensor_.defined()) scale_tensor_.fill_(state_.scale);
  checked_ = false;
}

}  // namespace salt::training
