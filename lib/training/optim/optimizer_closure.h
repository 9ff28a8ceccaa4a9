// torch::optim's closure convention for our own optimizers (Lion, Muon): the
// closure re-evaluates the loss with gradients on; step() itself runs without.
#pragma once
#include <torch/torch.h>

namespace salt::training {

inline torch::Tensor evaluate_closure(const torch::optim::Optimizer::LossClosure& closure) {
  if (!closure) return {};
  torch::AutoGradMode enable_grad(true);
  return closure();
}

}  // namespace salt::training
