// The torch.nn losses salt's tasks use, as a module so that class weights are
// buffers with torch.nn's names (`tasks.0.loss.weight`, `...pos_weight`).
#pragma once
#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

namespace salt::models {

enum class LossKind { CrossEntropy, BCEWithLogits, MSE, L1, GaussianNLL };

// The torch.nn class name ("CrossEntropyLoss"); each kind registers itself as
// torch.nn.<name> (models/tasks/loss.cpp), so the registry resolves every spelling.
std::string loss_class_name(LossKind kind);

struct LossOptions {
  explicit LossOptions(LossKind kind = LossKind::CrossEntropy) : kind_(kind) {}
  TORCH_ARG(LossKind, kind);
  TORCH_ARG(std::string, reduction) = "mean";                            // mean | sum | none
  // torch's deprecated size_average / reduce (CE, BCE, MSE, L1): when either is
  // set, they decide the reduction as torch's _Reduction.legacy_get_string does.
  TORCH_ARG(std::optional<bool>, size_average) = std::nullopt;
  TORCH_ARG(std::optional<bool>, reduce) = std::nullopt;
  TORCH_ARG(std::optional<std::vector<float>>, weight) = std::nullopt;      // CE: per class; BCE: per element
  TORCH_ARG(std::optional<std::vector<float>>, pos_weight) = std::nullopt;  // BCE
  TORCH_ARG(int64_t, ignore_index) = -100;                               // CE (classification tasks force -1)
  TORCH_ARG(double, label_smoothing) = 0.0;                              // CE
  TORCH_ARG(bool, full) = false;                                         // GaussianNLL
  TORCH_ARG(double, eps) = 1e-6;                                         // GaussianNLL
};

class LossImpl : public torch::nn::Module {
 public:
  explicit LossImpl(const LossOptions& options);
  // The loss with the configured reduction. CE: input [N, C] or [N, C, L], target
  // int64; BCE/MSE/L1: same shapes; GaussianNLL needs `var` (same shape as input).
  torch::Tensor forward(const torch::Tensor& input, const torch::Tensor& target, const torch::Tensor& var = {});
  // Per-element loss (reduction none), for tasks that mask entries themselves.
  torch::Tensor elementwise(const torch::Tensor& input, const torch::Tensor& target, const torch::Tensor& var = {});

  const LossOptions& options() const { return options_; }
  LossKind kind() const { return options_.kind(); }

  torch::Tensor weight, pos_weight;  // undefined when not configured

 private:
  torch::Tensor compute(const torch::Tensor& input, const torch::Tensor& target, const torch::Tensor& var,
                        const std::string& reduction);
  LossOptions options_;
};
TORCH_MODULE(Loss);

}  // namespace salt::models
