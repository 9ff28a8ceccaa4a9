#include "models/tasks/target_scaler.h"

#include "core/errors.h"
#include "models/registry.h"

#include "export/graph.h"

namespace salt::models {

namespace {

const config::Binding<ScaleOp>& scale_op_binding() {
  using namespace config;
  static const Binding<ScaleOp> b = [] {
    Binding<ScaleOp> s{ScaleOp{}};
    s.required("op", SALT_FIELD(op), "Operation.", t_choice({"log", "exp", "linear"}))
        .arg("x_scale", SALT_FIELD(x_scale), "Multiplier applied to the target first.")
        .arg("x_off", SALT_FIELD(x_off), "Offset added to the target first.")
        .arg("op_scale", SALT_FIELD(op_scale), "Multiplier applied after the operation.")
        .arg("op_off", SALT_FIELD(op_off), "Offset added after the operation.");
    return s;
  }();
  return b;
}

struct ScalerConfig {
  std::map<std::string, YAML::Node> scales;
};

const config::Binding<ScalerConfig>& scaler_binding() {
  static const auto b = config::Binding<ScalerConfig>({}).required(
      "scales", SALT_FIELD(scales), "{target: {op: log|exp|linear, x_scale, x_off, op_scale, op_off}} per target.",
      config::t_dict(scale_op_binding().type()));
  return b;
}

const bool kTargetScalerRegistered = config::register_component(
    {"salt.utils.scalers.RegressionTargetScaler", "target_scaler", scaler_binding().type(),
     "Per-target log/exp/linear scaling of regression targets, undone on the predictions."});

}  // namespace

const ScaleOp& TargetScaler::at(const std::string& target) const {
  auto it = scales_.find(target);
  if (it == scales_.end()) throw UsageError("scaler: no scale for the target '" + target + "'");
  return it->second;
}

torch::Tensor TargetScaler::scale(const std::string& target, const torch::Tensor& x) const {
  const ScaleOp& s = at(target);
  const auto inner = x * s.x_scale + s.x_off;
  const auto f = s.op == "log" ? torch::log(inner) : s.op == "exp" ? torch::exp(inner) : inner;
  return f * s.op_scale + s.op_off;
}

torch::Tensor TargetScaler::inverse(const std::string& target, const torch::Tensor& x) const {
  const ScaleOp& s = at(target);
  const auto f = (x - s.op_off) / s.op_scale;
  const auto inner = s.op == "log" ? torch::exp(f) : s.op == "exp" ? torch::log(f) : f;
  return (inner - s.x_off) / s.x_scale;
}

ox::Value TargetScaler::inverse_onnx(ox::Graph& g, const std::string& target, const ox::Value& x) const {
  const ScaleOp& s = at(target);
  auto f = g.op("Div", {g.op("Sub", {x, g.scalar(float(s.op_off))}), g.scalar(float(s.op_scale))});
  auto inner = s.op == "log" ? g.op("Exp", {f}) : s.op == "exp" ? g.op("Log", {f}) : f;
  return g.op("Div", {g.op("Sub", {inner, g.scalar(float(s.x_off))}), g.scalar(float(s.x_scale))});
}

TargetScaler read_target_scaler(const config::ComponentNode& node, const std::string& key) {
  const auto* spec = config::components().find(node.class_path);
  if (!spec || spec->category != "target_scaler")
    throw UsageError(key + ".class_path: '" + node.class_path + "' is not a target scaler");
  std::map<std::string, ScaleOp> scales;
  for (const auto& [target, n] : scaler_binding().read(node.init_args).scales) {
    ScaleOp s = scale_op_binding().read(n);
    if (s.x_scale == 0 || s.op_scale == 0)
      throw UsageError(key + ".init_args.scales." + target + ": x_scale and op_scale must be non-zero");
    scales[target] = s;
  }
  return TargetScaler(std::move(scales));
}

}  // namespace salt::models
