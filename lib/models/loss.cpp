#include "models/loss.h"

#include <cmath>

#include "core/errors.h"

namespace salt::models {
namespace {

namespace F = torch::nn::functional;

template <class Opt>
Opt with_reduction(Opt opt, const std::string& r) {
  if (r == "mean") return opt.reduction(torch::kMean);
  if (r == "sum") return opt.reduction(torch::kSum);
  return opt.reduction(torch::kNone);
}

torch::Tensor reduce(const torch::Tensor& t, const std::string& r) {
  if (r == "mean") return t.mean();
  if (r == "sum") return t.sum();
  return t;
}

}  // namespace

std::optional<LossKind> loss_kind_from_class_path(const std::string& class_path) {
  std::string name = class_path;
  for (const char* prefix : {"torch.nn.modules.loss.", "torch.nn."})
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
  if (name == "CrossEntropyLoss") return LossKind::CrossEntropy;
  if (name == "BCEWithLogitsLoss") return LossKind::BCEWithLogits;
  if (name == "MSELoss") return LossKind::MSE;
  if (name == "L1Loss") return LossKind::L1;
  if (name == "GaussianNLLLoss") return LossKind::GaussianNLL;
  return std::nullopt;
}

std::string loss_class_name(LossKind kind) {
  switch (kind) {
    case LossKind::CrossEntropy: return "CrossEntropyLoss";
    case LossKind::BCEWithLogits: return "BCEWithLogitsLoss";
    case LossKind::MSE: return "MSELoss";
    case LossKind::L1: return "L1Loss";
    case LossKind::GaussianNLL: return "GaussianNLLLoss";
  }
  return "?";
}

LossImpl::LossImpl(const LossOptions& options) : torch::nn::Module(loss_class_name(options.kind())), options_(options) {
  const auto& r = options.reduction();
  if (r != "mean" && r != "sum" && r != "none")
    throw UsageError(loss_class_name(options.kind()) + ": reduction '" + r + "' is not one of mean, sum, none");
  if (options.weight()) {
    if (options.kind() != LossKind::CrossEntropy && options.kind() != LossKind::BCEWithLogits)
      throw UsageError(loss_class_name(options.kind()) + " takes no 'weight'");
    weight = register_buffer("weight", torch::tensor(*options.weight(), torch::kFloat32));
  }
  if (options.pos_weight()) {
    if (options.kind() != LossKind::BCEWithLogits)
      throw UsageError(loss_class_name(options.kind()) + " takes no 'pos_weight'");
    pos_weight = register_buffer("pos_weight", torch::tensor(*options.pos_weight(), torch::kFloat32));
  }
}

torch::Tensor LossImpl::compute(const torch::Tensor& input, const torch::Tensor& target, const torch::Tensor& var,
                                const std::string& r) {
  switch (options_.kind()) {
    case LossKind::CrossEntropy:
      return F::cross_entropy(input, target,
                              with_reduction(F::CrossEntropyFuncOptions(), r)
                                  .weight(weight)
                                  .ignore_index(options_.ignore_index())
                                  .label_smoothing(options_.label_smoothing()));
    case LossKind::BCEWithLogits:
      return F::binary_cross_entropy_with_logits(
          input, target, with_reduction(F::BinaryCrossEntropyWithLogitsFuncOptions(), r).weight(weight).pos_weight(pos_weight));
    case LossKind::MSE:
      return F::mse_loss(input, target, with_reduction(F::MSELossFuncOptions(), r));
    case LossKind::L1:
      return F::l1_loss(input, target, with_reduction(F::L1LossFuncOptions(), r));
    case LossKind::GaussianNLL: {
      if (!var.defined()) throw UsageError("GaussianNLLLoss: no variance given (use GaussianRegressionTask)");
      // torch clamps the variance to eps without letting the clamp affect the gradient.
      auto v = var + (var.clamp_min(options_.eps()) - var).detach();
      auto l = 0.5 * (torch::log(v) + (input - target).pow(2) / v);
      if (options_.full()) l = l + 0.5 * std::log(2 * M_PI);
      return reduce(l, r);
    }
  }
  return {};
}

torch::Tensor LossImpl::forward(const torch::Tensor& input, const torch::Tensor& target, const torch::Tensor& var) {
  return compute(input, target, var, options_.reduction());
}

torch::Tensor LossImpl::elementwise(const torch::Tensor& input, const torch::Tensor& target, const torch::Tensor& var) {
  return compute(input, target, var, "none");
}

}  // namespace salt::models
