#include "training/optim/foreach_adamw.h"

#include <cmath>
#include <memory>

#include "core/torch_compat.h"

namespace salt::training {
namespace {

using torch::optim::AdamWOptions;
using torch::optim::AdamWParamState;

// torch's AdamW as salt's torch (>= 2.1) runs it: LibTorch's AdamW::step but the
// first moment by lerp_ (torch.optim.adamw's `exp_avg.lerp_(grad, 1 - beta1)`,
// which rounds otherwise than LibTorch's mul_ then add_), the second-moment
// correction's root as Python's `bc2 ** 0.5` in the multi-tensor path (CUDA,
// `_multi_tensor_adamw`) and math.sqrt in the single-tensor one (CPU), as in
// torch. One parameter at a time, AMSGrad included.
void update_one(const AdamWOptions& options, torch::Tensor& p, const torch::Tensor& grad, AdamWParamState& s) {
  if (options.weight_decay() != 0) p.mul_(1 - options.lr() * options.weight_decay());
  s.step(s.step() + 1);
  const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
  const double bias_correction1 = 1 - std::pow(beta1, s.step());
  const double bias_correction2 = 1 - std::pow(beta2, s.step());
  s.exp_avg().lerp_(grad, 1 - beta1);
  s.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  torch::Tensor denom;
  if (options.amsgrad()) {
    torch::max_out(s.max_exp_avg_sq(), s.exp_avg_sq(), s.max_exp_avg_sq());
    denom = (s.max_exp_avg_sq().sqrt() / std::sqrt(bias_correction2)).add_(options.eps());
  } else {
    denom = (s.exp_avg_sq().sqrt() / std::sqrt(bias_correction2)).add_(options.eps());
  }
  p.addcdiv_(s.exp_avg(), denom, -options.lr() / bias_correction1);
}

}  // namespace

torch::Tensor ForeachAdamW::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    auto& options = static_cast<AdamWOptions&>(group.options());
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
    std::vector<AdamWParamState*> states;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "AdamW does not support sparse gradients");
      auto key = compat::optimizer_state_key(state_, p);
      if (state_.find(key) == state_.end()) {  // LibTorch's initial state
        auto s = std::make_unique<AdamWParamState>();
        s->step(0);
        s->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        s->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        if (options.amsgrad()) s->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state_[key] = std::move(s);
      }
      auto* s = static_cast<AdamWParamState*>(state_[key].get());
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(s->exp_avg());
      exp_avg_sqs.push_back(s->exp_avg_sq());
      states.push_back(s);
    }
    if (params.empty()) continue;
    bool same_step = true;
    for (auto* s : states) same_step = same_step && s->step() == states.front()->step();
    if (options.amsgrad() || !same_step) {
      for (std::size_t i = 0; i < params.size(); ++i) update_one(options, params[i], grads[i], *states[i]);
      continue;
    }
    // torch's _multi_tensor_adamw, operator for operator (on the CPU, salt's torch runs
    // _single_tensor_adamw: the same arithmetic per element, the root by math.sqrt).
    if (options.weight_decay() != 0) at::_foreach_mul_(params, 1 - options.lr() * options.weight_decay());
    const int64_t step = states.front()->step() + 1;
    for (auto* s : states) s->step(step);
    const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    compat::foreach_lerp_(exp_avgs, grads, 1 - beta1);
    at::_foreach_mul_(exp_avg_sqs, beta2);
    at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
    auto denom = at::_foreach_sqrt(exp_avg_sqs);
    at::_foreach_div_(denom, params.front().is_cuda() ? std::pow(bias_correction2, 0.5) : std::sqrt(bias_correction2));
    at::_foreach_add_(denom, options.eps());
    const double step_size = options.lr() / bias_correction1;
    at::_foreach_addcdiv_(params, exp_avgs, denom, -step_size);
  }
  return loss;
}

}  // namespace salt::training
