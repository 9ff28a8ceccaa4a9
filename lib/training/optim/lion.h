// Lion, as lion_pytorch.Lion (lucidrains/lion-pytorch, lion_pytorch/lion_pytorch.py,
// commit 6a74fdc of 2024-11-27), which salt builds for `model.optimizer: lion` as
// Lion(model.parameters(), lr=lrs_config.initial, weight_decay=lrs_config.weight_decay):
// betas (0.9, 0.99), decoupled_weight_decay false. Per parameter with a gradient:
//   p *= 1 - lr * wd                                   (step weight decay)
//   p -= lr * sign(beta1 * exp_avg + (1 - beta1) * g)
//   exp_avg = beta2 * exp_avg + (1 - beta2) * g
// With decoupled_weight_decay, lion_pytorch divides wd by the lr given at
// construction (wd /= init_lr), so the decay per step is lr/init_lr * wd.
#pragma once
#include <torch/torch.h>

#include <tuple>
#include <vector>

namespace salt::training {

struct LionOptions : torch::optim::OptimizerCloneableOptions<LionOptions> {
  explicit LionOptions(double lr = 1e-4) : lr_(lr) {}
  TORCH_ARG(double, lr);
  typedef std::tuple<double, double> betas_t;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.99);
  TORCH_ARG(double, weight_decay) = 0.0;
  TORCH_ARG(bool, decoupled_weight_decay) = false;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct LionParamState : torch::optim::OptimizerCloneableParamState<LionParamState> {
  TORCH_ARG(torch::Tensor, exp_avg);  // zeros at the first step, as lion_pytorch
};

class Lion : public torch::optim::Optimizer {
 public:
  Lion(std::vector<torch::Tensor> params, const LionOptions& defaults);
  // Parameters without a gradient are skipped (and get no state), as in lion_pytorch.
  torch::Tensor step(LossClosure closure = nullptr) override;

 private:
  double init_lr_;  // lion_pytorch's _init_lr, for decoupled weight decay
};

}  // namespace salt::training
