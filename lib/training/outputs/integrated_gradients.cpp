#include "training/outputs/integrated_gradients.h"

#include <cmath>

#include "core/errors.h"

namespace salt::training {

std::pair<std::vector<double>, std::vector<double>> gauss_legendre(int n) {
  // Roots of the Legendre polynomial P_n by Newton's method from Chebyshev
  // guesses; weights 2 / ((1 - x^2) P_n'(x)^2); then mapped from [-1, 1] to [0, 1].
  std::vector<double> nodes(n), weights(n);
  for (int i = 0; i < n; ++i) {
    double x = std::cos(M_PI * (i + 0.75) / (n + 0.5)), dp = 0;
    for (int iter = 0; iter < 100; ++iter) {
      double p0 = 1, p1 = x;
      for (int k = 2; k <= n; ++k) {
        const double p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      const double pn = n == 1 ? x : p1, pn1 = n == 1 ? 1 : p0;  // P_n(x), P_{n-1}(x)
      dp = n * (x * pn - pn1) / (x * x - 1);
      const double step = pn / dp;
      x -= step;
      if (std::abs(step) < 1e-15) break;
    }
    nodes[n - 1 - i] = (x + 1) / 2;
    weights[n - 1 - i] = 1.0 / ((1 - x * x) * dp * dp);  // 2 / (...) on [-1, 1], halved for [0, 1]
  }
  return {nodes, weights};
}

torch::Tensor target_output(models::SaltWrapper& model, const models::TensorMap& inputs,
                            const models::TensorMap& pad_masks, const IgTarget& target) {
  auto out = model->forward(inputs, pad_masks);
  const auto input = out.preds.find(target.input);
  if (input == out.preds.end() || !input->second.count(target.task))
    throw UsageError("IntegratedGradientWriter: the model has no output " + target.input + "/" + target.task);
  auto y = input->second.at(target.task);
  if (y.dim() != 2) throw UsageError("IntegratedGradientWriter: output " + target.task + " is not one vector per jet");
  return target.add_softmax ? torch::softmax(y, -1) : y;
}

Attributions integrated_gradients(models::SaltWrapper& model, const models::TensorMap& x,
                                  const models::TensorMap& baseline, const models::TensorMap& pad_masks,
                                  const std::vector<std::string>& attributed, const IgTarget& target, int n_steps) {
  torch::AutoGradMode grad_mode(true);
  Attributions a;
  torch::Tensor fx, fb;
  {
    torch::NoGradGuard no_grad;
    fx = target_output(model, x, pad_masks, target);
    fb = target_output(model, baseline, pad_masks, target);
  }
  const int64_t classes = fx.size(1);
  std::map<std::string, torch::Tensor> sums;
  for (const auto& name : attributed) {
    std::vector<int64_t> shape{x.at(name).size(0), classes};
    for (int64_t d = 1; d < x.at(name).dim(); ++d) shape.push_back(x.at(name).size(d));
    sums[name] = torch::zeros(shape, x.at(name).options());
  }
  const auto [alphas, weights] = gauss_legendre(n_steps);
  for (int k = 0; k < n_steps; ++k) {
    auto point = x;
    std::vector<torch::Tensor> leaves;
    for (const auto& name : attributed) {
      point[name] = (baseline.at(name) + alphas[k] * (x.at(name) - baseline.at(name))).detach().requires_grad_(true);
      leaves.push_back(point[name]);
    }
    const auto f = target_output(model, point, pad_masks, target);
    for (int64_t c = 0; c < classes; ++c) {
      // Jets are independent, so the gradient of the batch sum is each jet's own.
      const auto grads = torch::autograd::grad({f.select(1, c).sum()}, leaves, {}, /*retain_graph=*/c + 1 < classes);
      for (std::size_t i = 0; i < attributed.size(); ++i)
        sums[attributed[i]].select(1, c).add_(grads[i].detach(), weights[k]);
    }
  }
  a.output_difference = fx - fb;
  torch::Tensor total = torch::zeros_like(fx);
  for (const auto& name : attributed) {
    auto attr = sums[name] * (x.at(name) - baseline.at(name)).unsqueeze(1);
    total += attr.flatten(2).sum(2);
    a.per_input[name] = attr;
  }
  a.delta = total - a.output_difference;
  return a;
}

}  // namespace salt::training
