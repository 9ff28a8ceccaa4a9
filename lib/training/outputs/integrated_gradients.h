// Integrated gradients (Sundararajan et al. 2017), as Captum computes them for
// salt's IntegratedGradientWriter: for an output f (a task's class
// probabilities, or logits) and a baseline x', the attribution of input entry i is
//   IG_i = (x_i - x'_i) * integral_0^1 df/dx_i(x' + a (x - x')) da,
// the integral by Gauss-Legendre quadrature (Captum's default method). They add up
// to f(x) - f(x') ("completeness"); what they miss is the convergence delta.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "models/salt_wrapper.h"

namespace salt::training {

// Gauss-Legendre nodes and weights for [0, 1] (weights sum to 1).
std::pair<std::vector<double>, std::vector<double>> gauss_legendre(int n);

struct IgTarget {
  std::string input, task;   // salt's output_keys: [input, task]
  bool add_softmax = true;   // attribute probabilities (else logits)
};

// The target output of the model for raw inputs: [N, C].
torch::Tensor target_output(models::SaltWrapper& model, const models::TensorMap& inputs,
                            const models::TensorMap& pad_masks, const IgTarget& target);

struct Attributions {
  std::map<std::string, torch::Tensor> per_input;  // input -> [N, C, <input's shape>]
  torch::Tensor output_difference;                 // f(x) - f(x'), [N, C]
  torch::Tensor delta;                             // sum of attributions - output_difference, [N, C]
};

// Attributions of every output class to the inputs named in `attributed` (the
// others stay at x), from `baseline` to `x`: same shapes and pad masks.
Attributions integrated_gradients(models::SaltWrapper& model, const models::TensorMap& x,
                                  const models::TensorMap& baseline, const models::TensorMap& pad_masks,
                                  const std::vector<std::string>& attributed, const IgTarget& target, int n_steps);

}  // namespace salt::training
