#include "models/tasks/loss.h"

#include <cmath>

#include "core/errors.h"
#include "models/registry.h"

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

config::TypeP reduction() { return config::t_choice({"mean", "sum", "none"}); }

// torch's _Reduction.legacy_get_string: an unset flag counts as true.
void apply_legacy_reduction(LossOptions& o) {
  if (!o.size_average() && !o.reduce()) return;
  const bool size_average = o.size_average().value_or(true), reduce = o.reduce().value_or(true);
  o.reduction(!reduce ? "none" : size_average ? "mean" : "sum");
}

// One binding per loss class: its own keys, on a LossOptions of its kind.
config::Binding<LossOptions> loss_binding(LossKind kind) {
  using namespace config;
  Binding<LossOptions> b{LossOptions(kind)};
  const char* reduction_help = "mean, sum or none.";
  const char* size_average_help = "Deprecated in torch: false sums instead of averaging (null: use reduction).";
  const char* reduce_help = "Deprecated in torch: false keeps one loss per element (null: use reduction).";
  switch (kind) {
    // torch's own argument order, as jsonargparse writes a salt run's config.yaml
    case LossKind::CrossEntropy:
      b.arg("weight", SALT_MEMBER(weight), "Class weights.")
          .arg("size_average", SALT_MEMBER(size_average), size_average_help)
          .arg("ignore_index", SALT_MEMBER(ignore_index), "Label value to ignore (tasks set -1).")
          .arg("reduce", SALT_MEMBER(reduce), reduce_help)
          .arg("reduction", SALT_MEMBER(reduction), reduction_help, reduction())
          .arg("label_smoothing", SALT_MEMBER(label_smoothing), "Label smoothing.");
      break;
    case LossKind::BCEWithLogits:
      b.arg("weight", SALT_MEMBER(weight), "Element weights.")
          .arg("size_average", SALT_MEMBER(size_average), size_average_help)
          .arg("reduce", SALT_MEMBER(reduce), reduce_help)
          .arg("reduction", SALT_MEMBER(reduction), reduction_help, reduction())
          .arg("pos_weight", SALT_MEMBER(pos_weight), "Weight of positive examples.");
      break;
    case LossKind::MSE:
    case LossKind::L1:
      b.arg("size_average", SALT_MEMBER(size_average), size_average_help)
          .arg("reduce", SALT_MEMBER(reduce), reduce_help)
          .arg("reduction", SALT_MEMBER(reduction), reduction_help, reduction());
      break;
    case LossKind::GaussianNLL:
      b.arg("full", SALT_MEMBER(full), "Include the constant term.")
          .arg("eps", SALT_MEMBER(eps), "Variance clamp.")
          .arg("reduction", SALT_MEMBER(reduction), reduction_help, reduction());
      break;
  }
  return b.finally(apply_legacy_reduction);
}

bool register_loss(LossKind kind, const std::string& help) {
  const auto name = loss_class_name(kind);
  auto binding = loss_binding(kind);
  return register_model_component<LossOptions>(
      {"torch.nn." + name, "loss", binding.type(), help, config::Support::kFull, "", {"torch.nn.modules.loss." + name}},
      [binding](const YAML::Node& init_args, const BuildContext&) { return binding.read(init_args); });
}

const bool kLossRegistered = register_loss(LossKind::CrossEntropy, "Cross entropy on logits.") &&
                         register_loss(LossKind::BCEWithLogits, "Binary cross entropy on logits.") &&
                         register_loss(LossKind::MSE, "Mean squared error.") &&
                         register_loss(LossKind::L1, "Mean absolute error.") &&
                         register_loss(LossKind::GaussianNLL, "Gaussian negative log likelihood.");

}  // namespace

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
