#include "training/optim/lion.h"

#include "core/torch_compat.h"
#include "training/optim/optimizer_closure.h"

namespace salt::training {
namespace {

// lion_pytorch's update_fn, op for op (same rounding as the Python original).
void lion_update(torch::Tensor& p, const torch::Tensor& grad, torch::Tensor& exp_avg, double lr, double wd,
                 double beta1, double beta2) {
  p.mul_(1.0 - lr * wd);
  auto update = exp_avg.mul(beta1).add(grad, 1.0 - beta1).sign_();
  p.add_(update, -lr);
  exp_avg.mul_(beta2).add_(grad, 1.0 - beta2);
}

}  // namespace

Lion::Lion(std::vector<torch::Tensor> params, const LionOptions& defaults)
    : Optimizer({torch::optim::OptimizerParamGroup(std::move(params))}, std::make_unique<LionOptions>(defaults)),
      init_lr_(defaults.lr()) {
  TORCH_CHECK(defaults.lr() > 0, "Lion: lr must be > 0, got ", defaults.lr());
}

torch::Tensor Lion::step(LossClosure closure) {
  auto loss = evaluate_closure(closure);
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const LionOptions&>(group.options());
    const auto [beta1, beta2] = options.betas();
    double wd = options.weight_decay();
    if (options.decoupled_weight_decay()) wd /= init_lr_;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& slot = state_[compat::optimizer_state_key(state_, p)];
      if (!slot) {
        auto fresh = std::make_unique<LionParamState>();
        fresh->exp_avg(torch::zeros_like(p));
        slot = std::move(fresh);
      }
      auto& exp_avg = static_cast<LionParamState&>(*slot).exp_avg();
      lion_update(p, p.grad(), exp_avg, options.lr(), wd, beta1, beta2);
    }
  }
  return loss;
}

}  // namespace salt::training
