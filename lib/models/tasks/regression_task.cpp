#include "models/tasks/regression_task.h"

#include "models/registry.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"

#include "export/layers.h"

namespace salt::models {

RegressionTaskImpl::RegressionTaskImpl(const TaskOptions& task, const RegressionOptions& o)
    : TaskImpl(o.gaussian() ? "GaussianRegressionTask" : "RegressionTask", task), reg_(o) {
  const auto r = static_cast<int64_t>(o.targets().size());
  const auto kind = loss->kind();
  if (r == 0) throw UsageError("task '" + name() + "': no regression targets");
  if (!o.target_denominators().empty() + o.norm_mean().has_value() + o.scaler().has_value() > 1)
    throw UsageError("task '" + name() +
                     "': can only use a single scaling method (norm_params, target_denominators or scaler)");
  if (o.scaler() && o.gaussian())
    throw UsageError("task '" + name() + "': GaussianRegressionTask cannot use a scaler (salt cannot map its variances "
                     "back either); use norm_params or target_denominators");
  if (o.scaler())
    for (const auto& t : o.targets())
      if (!o.scaler()->has(t)) throw UsageError("task '" + name() + "': the scaler has no scale for the target '" + t + "'");
  if (!o.target_denominators().empty() && static_cast<int64_t>(o.target_denominators().size()) != r)
    throw UsageError("task '" + name() + "': number of targets (" + std::to_string(r) +
                     ") does not match number of target denominators (" +
                     std::to_string(o.target_denominators().size()) + ")");
  if (o.norm_mean() && (static_cast<int64_t>(o.norm_mean()->size()) != r || !o.norm_std() ||
                        static_cast<int64_t>(o.norm_std()->size()) != r))
    throw UsageError("task '" + name() + "': norm_params needs one mean and one std per target (" + std::to_string(r) + ")");
  if (o.norm_std())
    for (float s : *o.norm_std())
      if (s == 0.0f || !std::isfinite(s)) throw UsageError("task '" + name() + "': norm_params std must be finite and non-zero");
  if (!o.custom_output_names().empty() && static_cast<int64_t>(o.custom_output_names().size()) != r)
    throw UsageError("task '" + name() + "': custom_output_names needs one name per target");
  if (o.gaussian()) {
    if (net->output_size() != 2 * r)
      throw UsageError("task '" + name() + "': GaussianRegressionTask needs 2 x " + std::to_string(r) +
                       " outputs (means and variances), got " + std::to_string(net->output_size()));
    if (kind != LossKind::GaussianNLL)
      throw UsageError("task '" + name() + "': GaussianRegressionTask needs GaussianNLLLoss, got " + loss_class_name(kind));
  } else {
    if (net->output_size() != r)
      throw UsageError("task '" + name() + "': number of outputs (" + std::to_string(net->output_size()) +
                       ") does not match number of targets (" + std::to_string(r) + ")");
    if (kind != LossKind::MSE && kind != LossKind::L1)
      throw UsageError("task '" + name() + "': RegressionTask needs MSELoss or L1Loss, got " + loss_class_name(kind));
  }
}

std::vector<std::string> RegressionTaskImpl::label_names() const {
  auto out = reg_.targets();
  out.insert(out.end(), reg_.target_denominators().begin(), reg_.target_denominators().end());
  if (sample_weight()) out.push_back(*sample_weight());
  return out;
}

torch::Tensor RegressionTaskImpl::scaled_targets(const Labels& labels) const {
  std::vector<torch::Tensor> cols;
  for (size_t i = 0; i < reg_.targets().size(); ++i) {
    auto t = label(labels, reg_.targets()[i]).to(torch::kFloat32);
    if (!reg_.target_denominators().empty()) t = t / label(labels, reg_.target_denominators()[i]).to(torch::kFloat32);
    if (reg_.norm_mean()) t = (t - (*reg_.norm_mean())[i]) / (*reg_.norm_std())[i];
    if (reg_.scaler()) t = reg_.scaler()->scale(reg_.targets()[i], t);
    cols.push_back(t);
  }
  return torch::stack(cols, -1);
}

TaskOutput RegressionTaskImpl::forward(const torch::Tensor& x, const torch::Tensor& pad_mask,
                                       const torch::Tensor& context, const Labels* labels, const ForwardContext&) {
  TaskOutput out;
  out.preds = net->forward(x, context);
  if (!labels) return out;

  auto targets = scaled_targets(*labels).to(out.preds.scalar_type());
  torch::Tensor means = out.preds, variances;
  if (reg_.gaussian()) {
    auto parts = out.preds.tensor_split(2, -1);
    means = parts[0];
    variances = torch::nn::functional::softplus(parts[1]);
  }
  out.loss = reg_.average_over() == "valid" ? loss_over_valid(means, variances, targets, pad_mask, *labels)
                                            : salt_nan_loss(means, variances, targets, pad_mask, *labels);
  out.loss = out.loss * weight();
  return out;
}

// salt's RegressionTaskBase.nan_loss after get_targets: targets nan_to_num'd,
// padded slots' predictions, targets (and variances) zeroed, then the loss
// reduced as configured over every entry: "none" weights the entries and takes
// the nanmean, "mean"/"sum" reduce the entries unweighted (salt refuses weights
// with them: finish_sample_weight).
torch::Tensor RegressionTaskImpl::salt_nan_loss(torch::Tensor means, torch::Tensor variances, torch::Tensor targets,
                                                const torch::Tensor& pad_mask, const Labels& labels) {
  targets = torch::nan_to_num(targets, 0.0, 0.0, 0.0);
  if (pad_mask.defined()) {
    const auto padded = pad_mask.unsqueeze(-1);
    means = means.masked_fill(padded, 0.0);
    targets = targets.masked_fill(padded, 0.0);
    if (variances.defined()) variances = variances.masked_fill(padded, 0.0);
  }
  auto per = loss->elementwise(means, targets, variances);
  const auto& reduction = loss->options().reduction();
  if (reduction == "sum") return per.sum();
  if (reduction == "mean") return per.mean();
  auto w = sample_weights(labels);
  if (w.defined()) per = per * w.to(per.scalar_type()).unsqueeze(-1);
  return per.nanmean();
}

// salt-cpp's own average: non-finite targets and padded slots are left out, the
// (weighted) loss summed over the rest and divided by their number.
torch::Tensor RegressionTaskImpl::loss_over_valid(const torch::Tensor& means, const torch::Tensor& variances,
                                                  const torch::Tensor& targets, const torch::Tensor& pad_mask,
                                                  const Labels& labels) {
  auto valid = torch::isfinite(targets);
  if (pad_mask.defined()) valid = valid & pad_mask.logical_not().unsqueeze(-1);
  auto per = loss->elementwise(means, targets.masked_fill(valid.logical_not(), 0.0), variances);
  auto w = sample_weights(labels);
  if (w.defined()) per = per * w.to(per.scalar_type()).unsqueeze(-1);
  auto total = per.masked_fill(valid.logical_not(), 0.0).sum();
  return loss->options().reduction() == "sum" ? total : total / valid.sum().clamp_min(1);
}

std::pair<torch::Tensor, torch::Tensor> RegressionTaskImpl::unscale(const Labels* labels, const torch::Tensor& like) const {
  const auto r = static_cast<int64_t>(reg_.targets().size());
  auto opts = like.options().dtype(torch::kFloat32);
  if (reg_.norm_mean())
    return {torch::tensor(*reg_.norm_std(), opts), torch::tensor(*reg_.norm_mean(), opts)};
  if (!reg_.target_denominators().empty()) {
    if (!labels)
      throw InputError("task '" + name() + "': predictions scaled by target_denominators need the denominators' labels");
    std::vector<torch::Tensor> d;
    for (const auto& den : reg_.target_denominators()) d.push_back(label(*labels, den).to(torch::kFloat32));
    return {torch::stack(d, -1), torch::zeros({r}, opts)};
  }
  return {torch::ones({r}, opts), torch::zeros({r}, opts)};
}

PredictionColumns RegressionTaskImpl::predict(const torch::Tensor& preds, const torch::Tensor& pad_mask,
                                              const Labels* labels, const std::string& model_name) const {
  PredictionColumns cols;
  auto p = preds.detach().to(torch::kFloat32);
  auto [scale, offset] = unscale(labels, p);
  if (reg_.gaussian()) {
    auto parts = p.tensor_split(2, -1);
    auto means = parts[0] * scale + offset;
    // sigma = sqrt(softplus(raw variance)) in target units. (salt indexes the
    // variance as column i+1, right only for one target, and skips the softplus
    // with denominators; this is the intended formula.)
    auto stds = torch::sqrt(torch::nn::functional::softplus(parts[1])) * scale.abs();
    cols.values = torch::cat({means, stds}, -1);
    for (const auto& t : reg_.targets()) cols.names.push_back(name() + "_" + t);
    for (const auto& t : reg_.targets()) cols.names.push_back(name() + "_" + t + "_stddev");
  } else {
    cols.values = p * scale + offset;
    if (reg_.scaler()) {
      std::vector<torch::Tensor> v;
      for (int64_t i = 0; i < static_cast<int64_t>(reg_.targets().size()); ++i)
        v.push_back(reg_.scaler()->inverse(reg_.targets()[static_cast<size_t>(i)], p.select(-1, i)));
      cols.values = torch::stack(v, -1);
    }
    const auto& names = reg_.custom_output_names().empty() ? reg_.targets() : reg_.custom_output_names();
    for (const auto& t : names) cols.names.push_back(model_name + "_" + t);
  }
  if (pad_mask.defined()) cols.values = cols.values.masked_fill(pad_mask.unsqueeze(-1), NAN);
  return cols;
}

namespace {

struct RegressionTaskConfig : TaskBaseConfig {
  RegressionOptions reg;
  std::optional<std::vector<std::string>> target_denominators, custom_output_names;
  std::optional<std::map<std::string, std::vector<float>>> norm_params;  // {mean, std}, checked by the builder
  std::optional<config::ComponentNode> scaler;                           // read by read_target_scaler
  std::string average_over = "all";
};

const config::Binding<RegressionTaskConfig>& regression_binding() {
  using namespace config;
  using C = RegressionTaskConfig;
  static const Binding<C> b = [] {
    const auto str_or_list = t_union({t_str(), t_list(t_str())});
    Binding<C> t{C{}};
    bind_task_base(t);
    t.required("targets", [](C& c) -> auto& { return c.reg.targets(); }, "Regression target label(s).", str_or_list)
        .arg("scaler", SALT_FIELD(scaler), "salt.utils.scalers.RegressionTargetScaler: per-target log/exp/linear scaling.",
             t_optional(t_component("target_scaler")))
        .arg("target_denominators", SALT_FIELD(target_denominators), "Divide each target by this variable.",
             t_optional(str_or_list))
        .arg("norm_params", SALT_FIELD(norm_params), "{mean, std} to standardise the targets.",
             t_optional(t_dict(t_union({t_float(), t_list(t_float())}))))
        .arg("custom_output_names", SALT_FIELD(custom_output_names), "Output column names.", t_optional(str_or_list))
        .arg("average_over", SALT_FIELD(average_over),
             "salt-cpp only. all (salt's nan_loss): the loss's mean over every entry, padded slots included as 0 "
             "and NaN/inf targets as 0; valid: over the real constituents' finite targets only.",
             t_choice({"all", "valid"}));
    bind_sample_weight(t);
    return t;
  }();
  return b;
}

std::shared_ptr<TaskImpl> build_regression(const YAML::Node& init_args, const BuildContext& ctx, bool gaussian) {
  auto c = regression_binding().read(init_args);
  finish_task_base(c, ctx);
  finish_sample_weight(c, ctx);
  auto& r = c.reg;
  r.gaussian(gaussian);
  r.average_over(c.average_over);
  r.target_denominators(c.target_denominators.value_or(std::vector<std::string>{}));
  r.custom_output_names(c.custom_output_names.value_or(std::vector<std::string>{}));
  if (c.scaler) r.scaler(read_target_scaler(*c.scaler, ctx.arg("scaler")));
  if (c.norm_params) {
    const auto np = ctx.arg("norm_params");
    for (const auto& [key, values] : *c.norm_params) {
      if (key == "mean") r.norm_mean(values);
      else if (key == "std") r.norm_std(values);
      else throw UsageError(np + "." + key + ": unknown key");
    }
    if (!r.norm_mean() || !r.norm_std()) throw UsageError(np + ": needs both mean and std");
  }
  return std::make_shared<RegressionTaskImpl>(c.task, r);
}

const bool kRegressionTaskRegistered =
    register_model_component<std::shared_ptr<TaskImpl>>(
        {"salt.models.RegressionTask", "task", regression_binding().type(), "Regression of one or more targets.",
         config::Support::kFull, "", {"salt.models.task.RegressionTask"}},
        [](const YAML::Node& a, const BuildContext& ctx) { return build_regression(a, ctx, false); }) &&
    register_model_component<std::shared_ptr<TaskImpl>>(
        {"salt.models.GaussianRegressionTask", "task", regression_binding().type(), "Regression of a mean and a variance.",
         config::Support::kFull, "", {"salt.models.task.GaussianRegressionTask"}},
        [](const YAML::Node& a, const BuildContext& ctx) { return build_regression(a, ctx, true); });

}  // namespace


namespace {

// The per-target (scale, offset) of unscale() as graph values [1, R].
std::pair<ox::Value, ox::Value> unscale_onnx(ox::Graph& g, const RegressionOptions& reg, const OnnxTaskInput& in,
                                             const std::string& task) {
  const auto r = static_cast<int64_t>(reg.targets().size());
  if (reg.norm_mean())
    return {g.constant(torch::tensor(*reg.norm_std()).reshape({1, r}), "reg_std"),
            g.constant(torch::tensor(*reg.norm_mean()).reshape({1, r}), "reg_mean")};
  if (reg.target_denominators().empty()) return {g.scalar(1.f), g.scalar(0.f)};
  // Denominators come from the global object's (raw) inputs, as salt's exporter reads them.
  std::vector<int64_t> cols;
  for (const auto& den : reg.target_denominators()) {
    const auto& vars = *in.global_variables;
    auto it = std::find(vars.begin(), vars.end(), den);
    if (it == vars.end())
      throw UsageError("to_onnx: task '" + task + "' divides by '" + den +
                       "', which is not an input variable of the global object (the graph cannot read it)");
    cols.push_back(it - vars.begin());
  }
  return {g.op("Gather", {in.raw_global, g.ints(cols)}, {{"axis", int64_t{1}}}), g.scalar(0.f)};
}

}  // namespace

std::vector<OnnxOutput> RegressionTaskImpl::to_onnx(ox::Graph& g, const OnnxTaskInput& in,
                                                    const std::string& model_name) {
  if (!in.context.empty())
    throw UsageError("to_onnx: constituent regression task '" + name() + "' has no ONNX output (salt exports jet-level tasks)");
  const auto r = static_cast<int64_t>(reg_.targets().size());
  auto p = net->to_onnx(g, in.x);
  auto [scale, offset] = unscale_onnx(g, reg_, in, name());
  std::vector<ox::Value> columns;
  std::vector<std::string> names;
  if (reg_.gaussian()) {
    auto parts = g.op_n("Split", {p}, 2, {{"axis", int64_t{-1}}});
    auto means = g.op("Add", {g.op("Mul", {parts[0], scale}), offset});
    auto stds = g.op("Mul", {g.op("Sqrt", {g.op("Softplus", {parts[1]})}), g.op("Abs", {scale})});
    columns = ox::split_columns(g, means, r);
    for (auto& s : ox::split_columns(g, stds, r)) columns.push_back(s);
    for (const auto& t : reg_.targets()) names.push_back(model_name + "_" + t);
    for (const auto& t : reg_.targets()) names.push_back(model_name + "_" + t + "_stddev");
  } else {
    auto values = g.op("Add", {g.op("Mul", {p, scale}), offset});
    columns = ox::split_columns(g, values, r);
    if (reg_.scaler()) {
      columns = ox::split_columns(g, p, r);
      for (int64_t i = 0; i < r; ++i)
        columns[static_cast<size_t>(i)] = reg_.scaler()->inverse_onnx(g, reg_.targets()[static_cast<size_t>(i)], columns[static_cast<size_t>(i)]);
    }
    const auto& out = reg_.custom_output_names().empty() ? reg_.targets() : reg_.custom_output_names();
    for (const auto& t : out) names.push_back(model_name + "_" + t);
  }
  std::vector<OnnxOutput> outs;
  for (size_t i = 0; i < columns.size(); ++i) outs.push_back({names[i], ox::to_scalar(g, columns[i])});
  return outs;
}

ox::Value RegressionTaskImpl::object_values_onnx(ox::Graph& g, const ox::Value& x) {
  if (reg_.gaussian() || !reg_.target_denominators().empty())
    throw UsageError("to_onnx: object task '" + name() + "' must be a RegressionTask without target_denominators");
  const auto r = static_cast<int64_t>(reg_.targets().size());
  auto p = net->to_onnx(g, x);
  if (reg_.scaler()) {
    auto columns = ox::split_columns(g, p, r);
    for (int64_t i = 0; i < r; ++i) {
      auto& c = columns[static_cast<size_t>(i)];
      c = reg_.scaler()->inverse_onnx(g, reg_.targets()[static_cast<size_t>(i)], c);
    }
    return g.op("Concat", columns, {{"axis", int64_t{-1}}});
  }
  OnnxTaskInput none;
  auto [scale, offset] = unscale_onnx(g, reg_, none, name());
  return g.op("Add", {g.op("Mul", {p, scale}), offset});
}

}  // namespace salt::models
