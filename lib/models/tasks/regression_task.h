// salt.models.RegressionTask / GaussianRegressionTask. Targets are scaled by
// norm_params ((t - mean) / std), divided by target_denominators (labels of the
// same input), or transformed by a `scaler` (models/tasks/target_scaler.h).
// The loss is salt's nan_loss by default (see RegressionOptions::average_over).
// Inference undoes the scaling; padded slots are NaN.
#pragma once
#include <optional>

#include "models/tasks/target_scaler.h"
#include "models/tasks/task.h"

namespace salt::models {

struct RegressionOptions {
  TORCH_ARG(std::vector<std::string>, targets);
  TORCH_ARG(std::vector<std::string>, target_denominators);  // empty = none
  TORCH_ARG(std::optional<std::vector<float>>, norm_mean) = std::nullopt;
  TORCH_ARG(std::optional<std::vector<float>>, norm_std) = std::nullopt;
  TORCH_ARG(std::vector<std::string>, custom_output_names);  // RegressionTask only
  TORCH_ARG(bool, gaussian) = false;  // GaussianRegressionTask: outputs means then variances
  TORCH_ARG(std::optional<TargetScaler>, scaler) = std::nullopt;  // salt's RegressionTargetScaler
  // Which entries the loss averages over. "all" (salt's nan_loss): every [B, (L,) R]
  // entry, padded slots included with prediction and target 0 (GaussianNLL: variance
  // 0, clamped to eps), non-finite targets set to 0. "valid" (salt-cpp only): the
  // real constituents' entries with finite targets, sample-weighted.
  TORCH_ARG(std::string, average_over) = "all";
};

class RegressionTaskImpl : public TaskImpl {
 public:
  RegressionTaskImpl(const TaskOptions& task, const RegressionOptions& options);
  TaskOutput forward(const torch::Tensor& x, const torch::Tensor& pad_mask, const torch::Tensor& context,
                     const Labels* labels, const ForwardContext& forward_context) override;
  // RegressionTask: "<model>_<target>" (or custom_output_names).
  // GaussianRegressionTask: "<task>_<target>" then "<task>_<target>_stddev", as
  // salt's prediction writer names them.
  PredictionColumns predict(const torch::Tensor& preds, const torch::Tensor& pad_mask, const Labels* labels,
                            const std::string& model_name) const override;
  std::vector<OnnxOutput> to_onnx(ox::Graph& g, const OnnxTaskInput& in, const std::string& model_name) override;
  std::vector<std::string> label_names() const override;
  // An object task's predictions for one jet's objects, x [M, E] -> [M, R] in
  // physical units (the scaler or norm_params undone), for the MaskFormer export.
  ox::Value object_values_onnx(ox::Graph& g, const ox::Value& x);
  const std::vector<std::string>& targets() const { return reg_.targets(); }

  // Targets [..., R] scaled as the loss sees them (NaN stays NaN).
  torch::Tensor scaled_targets(const Labels& labels) const;

 private:
  // The unweighted-task loss for average_over "all" (salt's) and "valid"; variances
  // undefined unless Gaussian.
  torch::Tensor salt_nan_loss(torch::Tensor means, torch::Tensor variances, torch::Tensor targets,
                              const torch::Tensor& pad_mask, const Labels& labels);
  torch::Tensor loss_over_valid(const torch::Tensor& means, const torch::Tensor& variances, const torch::Tensor& targets,
                                const torch::Tensor& pad_mask, const Labels& labels);
  // Per-target scale and offset to undo the scaling: value = pred * scale + offset.
  std::pair<torch::Tensor, torch::Tensor> unscale(const Labels* labels, const torch::Tensor& like) const;
  RegressionOptions reg_;
};

}  // namespace salt::models
