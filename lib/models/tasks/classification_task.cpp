#include "models/tasks/classification_task.h"

#include "models/packing/host_read.h"
#include "models/packing/host_twins.h"

#include <algorithm>

#include "models/model_context.h"
#include "models/registry.h"
#include "models/tasks/class_names.h"

#include "core/errors.h"
#include "models/tasks/class_names.h"

#include "export/layers.h"

namespace salt::models {

namespace {

// salt's apply_sample_weight: (loss * weights).mean() over every entry, so entries
// the loss ignores (padded, label -1) count with 0 in the mean.
torch::Tensor weighted_mean(const torch::Tensor& per, const torch::Tensor& w, int64_t entries) {
  return (per * w.to(per.scalar_type())).sum() / static_cast<double>(std::max<int64_t>(entries, 1));
}

// salt forces CrossEntropy's ignore_index to -1 in every classification task.
TaskOptions with_ignore_index(TaskOptions t) {
  auto loss = t.loss();
  if (loss.kind() == LossKind::CrossEntropy) loss.ignore_index(-1);
  return t.loss(loss);
}
}  // namespace

ClassificationTaskImpl::ClassificationTaskImpl(const TaskOptions& task, const ClassificationOptions& options)
    : TaskImpl("ClassificationTask", with_ignore_index(task)), options_cls_(options) {
  const auto kind = loss->kind();
  if (kind != LossKind::CrossEntropy && kind != LossKind::BCEWithLogits)
    throw UsageError("task '" + name() + "': ClassificationTask needs CrossEntropyLoss or BCEWithLogitsLoss, got " +
                     loss_class_name(kind));
  const auto n = static_cast<int64_t>(options.class_names().size());
  if (n != net->output_size())
    throw UsageError("task '" + name() + "': number of outputs (" + std::to_string(net->output_size()) +
                     ") does not match number of class names (" + std::to_string(n) + ")");
  if (kind == LossKind::CrossEntropy && loss->weight.defined() && loss->weight.numel() != n)
    throw UsageError("task '" + name() + "': " + std::to_string(loss->weight.numel()) + " class weights for " +
                     std::to_string(n) + " classes");
}

torch::Tensor ClassificationTaskImpl::prepare_labels(const torch::Tensor& raw, const torch::Tensor& pad_mask) const {
  auto labels = raw.to(torch::kLong);
  if (options_cls_.label_map()) {
    // Every rule reads the original labels, so rules never chain (as in salt).
    auto mapped = labels.clone();
    for (const auto& [from, to] : *options_cls_.label_map()) mapped.masked_fill_(labels == from, to);
    labels = mapped;
  }
  auto ignored = raw.to(torch::kLong) == -2;
  if (pad_mask.defined()) ignored = ignored | pad_mask;
  return labels.masked_fill(ignored, -1);
}

torch::Tensor ClassificationTaskImpl::host_labels(const torch::Tensor& raw, const torch::Tensor& pad_mask,
                                                  const HostTwins* twins) const {
  const auto host_raw = host_twin(twins, raw), host_mask = host_twin(twins, pad_mask);
  if (!host_raw.defined() || (pad_mask.defined() && !host_mask.defined())) return {};
  return prepare_labels(host_raw, host_mask);
}

TaskOutput ClassificationTaskImpl::forward(const torch::Tensor& x, const torch::Tensor& pad_mask,
                                           const torch::Tensor& context, const Labels* labels,
                                           const ForwardContext& forward_context) {
  TaskOutput out;
  out.preds = net->forward(x, context);
  if (!labels) return out;
  const auto& raw = label(*labels, options_cls_.label());
  auto y = prepare_labels(raw, pad_mask);
  out.loss = compute_loss(out.preds, y, sample_weights(*labels), y.numel(),
                          host_labels(raw, pad_mask, forward_context.twins));
  return out;
}

TaskOutput ClassificationTaskImpl::forward_packed(const torch::Tensor& rows, const TokenIndex& idx,
                                                  const torch::Tensor& pad_mask, const torch::Tensor& context,
                                                  const Labels* labels, const ForwardContext& forward_context) {
  // The head runs on the valid tokens only; padded slots of preds are 0.
  auto preds = net->forward_gathered(rows, context, idx.jet, &idx);
  TaskOutput out;
  out.preds = idx.scatter(preds);
  if (labels) {
    const auto& raw = label(*labels, options_cls_.label());
    auto y = prepare_labels(raw, pad_mask);
    auto w = sample_weights(*labels);
    // Padding rows (static or bucketed rows) are padded slots, whose weights may be NaN
    // (a track the file's selections removed): 0 there, or 0 x NaN spoils the mean.
    if (w.defined()) w = idx.zero_padding(w.reshape({-1}).index_select(0, idx.flat));
    // Padded slots are -1 in the host copy: it holds the same valid labels as the rows.
    out.loss = compute_loss(preds, y.reshape({-1}).index_select(0, idx.flat), w, y.numel(),
                            host_labels(raw, pad_mask, forward_context.twins));
  }
  return out;
}

// The unreduced loss per entry (reduction none, which sample_weight requires); 0 where ignored.
torch::Tensor ClassificationTaskImpl::per_entry_loss(const torch::Tensor& preds, const torch::Tensor& y,
                                                     const torch::Tensor& valid) {
  if (loss->kind() == LossKind::BCEWithLogits) {
    auto logits = preds.squeeze(-1);
    return loss->elementwise(logits, y.clamp_min(0).to(logits.scalar_type())).masked_fill(valid.logical_not(), 0.0);
  }
  return preds.dim() == 3 ? loss->forward(preds.permute({0, 2, 1}), y) : loss->forward(preds, y);
}

std::vector<std::string> ClassificationTaskImpl::label_names() const {
  std::vector<std::string> out{options_cls_.label()};
  if (sample_weight()) out.push_back(*sample_weight());
  return out;
}

torch::Tensor ClassificationTaskImpl::compute_loss(const torch::Tensor& preds, const torch::Tensor& y,
                                                   const torch::Tensor& w, int64_t entries,
                                                   const torch::Tensor& host_y) {
  auto valid = y != -1;
  // The labels the checks read: the host copy, or the device's in one read (each
  // read waits for the GPU).
  const bool any_valid = host_y.defined() ? check_labels(host_y, true) : check_labels(y, false);
  // With no valid label torch's mean would be 0/0; keep the graph and give 0.
  if (!any_valid) return preds.sum() * 0.0;
  if (w.defined()) return weighted_mean(per_entry_loss(preds, y, valid), w, entries) * weight();
  torch::Tensor result;
  if (loss->kind() == LossKind::BCEWithLogits) {
    auto logits = preds.squeeze(-1);
    auto target = y.clamp_min(0).to(logits.scalar_type());
    auto per = loss->elementwise(logits, target).masked_select(valid);
    const auto& r = loss->options().reduction();
    result = r == "sum" ? per.sum() : per.mean();
  } else {
    result = preds.dim() == 3 ? loss->forward(preds.permute({0, 2, 1}), y) : loss->forward(preds, y);
    if (result.dim() != 0) result = result.sum() / valid.sum();  // reduction none: mean over valid slots
  }
  return result * weight();
}

bool ClassificationTaskImpl::check_labels(const torch::Tensor& checked, bool on_host) const {
  const int64_t num_classes = loss->kind() == LossKind::BCEWithLogits ? 2 : net->output_size();
  const auto checked_valid = checked != -1;
  const auto out_of_range = checked_valid & ((checked < 0) | (checked >= num_classes));
  auto flags = torch::stack({out_of_range.any(), checked_valid.any()});
  if (!on_host) flags = host_copy(flags);
  if (flags[0].item<bool>()) {
    const auto first_bad = checked.masked_select(out_of_range)[0];
    const auto bad = on_host ? first_bad.item<int64_t>() : host_read<int64_t>(first_bad);
    throw InputError("task '" + name() + "': label '" + options_cls_.label() + "' has value " + std::to_string(bad) +
                     " outside [0, " + std::to_string(num_classes) + ") (missing label_map entry?)");
  }
  return flags[1].item<bool>();
}

bool ClassificationTaskImpl::labels_replayable(const Labels& labels, const torch::Tensor& pad_mask,
                                               const HostTwins& twins) const {
  const auto host = host_labels(label(labels, options_cls_.label()), pad_mask, &twins);
  return !host.defined() || check_labels(host, true);
}

PredictionColumns ClassificationTaskImpl::predict(const torch::Tensor& preds, const torch::Tensor& pad_mask,
                                                  const Labels*, const std::string& model_name) const {
  PredictionColumns cols;
  for (const auto& c : options_cls_.class_names()) cols.names.push_back(model_name + "_" + probability_name(c));
  auto p = preds.to(torch::kFloat32);
  if (loss->kind() == LossKind::BCEWithLogits)
    cols.values = torch::sigmoid(p);
  else if (!pad_mask.defined())
    cols.values = torch::softmax(p, -1);
  else
    cols.values = masked_softmax(p, pad_mask.unsqueeze(-1), -1);
  return cols;
}

namespace {

struct ClassificationTaskConfig : TaskBaseConfig {
  ClassificationOptions cls{};  // explicit constructor: aggregate init of C{} needs the braces (clang)
  std::optional<std::vector<std::string>> class_names;
  bool use_class_dict = false;
};

const config::Binding<ClassificationTaskConfig>& classification_binding() {
  using namespace config;
  using C = ClassificationTaskConfig;
  static const Binding<C> b = [] {
    Binding<C> t{C{}};
    bind_task_base(t);
    t.required("label", [](C& c) -> auto& { return c.cls.label(); }, "Label variable of input_name.")
        .arg("class_names", SALT_FIELD(class_names), "Class names (null: the file's flavour_label attribute).")
        .arg("label_map", [](C& c) -> auto& { return c.cls.label_map(); }, "Remap label values, e.g. {0: 0, 4: 1, 5: 2}.");
    bind_sample_weight(t);
    t.arg("use_class_dict", SALT_FIELD(use_class_dict), "Take the loss's class weights from data.class_dict.");
    return t;
  }();
  return b;
}

std::shared_ptr<TaskImpl> build_classification(const YAML::Node& init_args, const BuildContext& ctx) {
  auto c = classification_binding().read(init_args);
  finish_task_base(c, ctx);
  finish_sample_weight(c, ctx);
  const auto& input = c.task.input_name();
  const auto& label = c.cls.label();
  auto names = c.class_names;
  if (!names && ctx.model->class_names) names = ctx.model->class_names(input, label);
  if (!names) names = default_class_names(label);
  if (!names)
    throw UsageError(ctx.arg("class_names") + ": task '" + c.task.name() + "' needs class_names (none known for label '" +
                     label + "')");
  c.cls.class_names(*names);
  if (c.cls.label_map() && !c.class_names) throw UsageError(ctx.arg("label_map") + ": specify class_names when using label_map");
  if (c.use_class_dict && !c.task.loss().weight()) {
    std::optional<std::vector<float>> w;
    if (ctx.model->class_weights) w = ctx.model->class_weights(input, label);
    if (!w)
      throw UsageError(ctx.arg("use_class_dict") + ": no class weights for '" + input + "." + label + "' in data.class_dict");
    c.task.loss().weight(*w);
  }
  return std::make_shared<ClassificationTaskImpl>(c.task, c.cls);
}

const bool kClassificationTaskRegistered = register_model_component<std::shared_ptr<TaskImpl>>(
    {"salt.models.ClassificationTask", "task", classification_binding().type(), "Jet- or constituent-level classification.",
     config::Support::kFull, "", {"salt.models.task.ClassificationTask"}},
    build_classification);

}  // namespace


std::vector<OnnxOutput> ClassificationTaskImpl::to_onnx(ox::Graph& g, const OnnxTaskInput& in,
                                                        const std::string& model_name) {
  const bool constituents = !in.context.empty();
  auto logits = net->to_onnx(g, in.x, in.context);
  if (constituents) {
    // salt exports the aux track tasks as the argmax class per track, int8.
    const std::string out = name() == "track_origin" ? "TrackOrigin" : name() == "track_type" ? "TrackType" : "";
    if (out.empty())
      throw UsageError("to_onnx: constituent task '" + name() + "' has no ONNX output (salt exports track_origin, "
                       "track_type and track_vertexing)");
    auto cls = g.op("ArgMax", {logits}, {{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}});
    return {{model_name + "_" + out, g.op("Cast", {cls}, {{"to", int64_t{3}}}), true}};  // 3: INT8
  }
  auto probs = loss->kind() == LossKind::BCEWithLogits ? g.op("Sigmoid", {logits})
                                                       : g.op("Softmax", {logits}, {{"axis", int64_t{-1}}});
  const auto& classes = options_cls_.class_names();
  auto columns = ox::split_columns(g, probs, static_cast<int64_t>(classes.size()));
  std::vector<OnnxOutput> outs;
  for (size_t i = 0; i < classes.size(); ++i)
    outs.push_back({model_name + "_" + probability_name(classes[i]), ox::to_scalar(g, columns[i])});
  return outs;
}

}  // namespace salt::models
