#include "training/optim/grad_clip.h"

namespace salt::training {

torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return {};
  std::vector<torch::Tensor> norms;
  norms.reserve(grads.size());
  for (const auto& g : grads) norms.push_back(g.norm(2.0));
  auto total = norms.size() == 1 ? norms[0] : torch::stack(norms).norm(2.0);
  auto coef = torch::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0);
  for (auto& g : grads) g.mul_(coef);
  return total;
}

}  // namespace salt::training
