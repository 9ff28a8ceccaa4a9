// salt.utils.scalers.RegressionTargetScaler: a regression task's `scaler`. Each
// target has an operation applied before the loss and undone on the predictions:
//   log:    log(x * x_scale + x_off) * op_scale + op_off
//   exp:    exp(x * x_scale + x_off) * op_scale + op_off
//   linear: (x * x_scale + x_off) * op_scale + op_off
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>

#include "config/bind.h"

#include "export/fwd.h"

namespace salt::models {

struct ScaleOp {
  std::string op;  // log, exp, linear
  double x_scale = 1, x_off = 0, op_scale = 1, op_off = 0;
};

class TargetScaler {
 public:
  TargetScaler() = default;
  explicit TargetScaler(std::map<std::string, ScaleOp> scales) : scales_(std::move(scales)) {}

  torch::Tensor scale(const std::string& target, const torch::Tensor& x) const;
  torch::Tensor inverse(const std::string& target, const torch::Tensor& x) const;
  ox::Value inverse_onnx(ox::Graph& g, const std::string& target, const ox::Value& x) const;
  bool has(const std::string& target) const { return scales_.count(target) > 0; }

 private:
  const ScaleOp& at(const std::string& target) const;
  std::map<std::string, ScaleOp> scales_;
};

// The `scaler` component node ({class_path, init_args: {scales: {...}}}) read into a
// TargetScaler; `key` names the node in errors.
TargetScaler read_target_scaler(const config::ComponentNode& node, const std::string& key);

}  // namespace salt::models
