#include "models/classification_task.h"

#include "core/errors.h"
#include "models/class_names.h"

namespace salt::models {

namespace {
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

TaskOutput ClassificationTaskImpl::forward(const torch::Tensor& x, const torch::Tensor& pad_mask,
                                           const torch::Tensor& context, const Labels* labels) {
  TaskOutput out;
  out.preds = net->forward(x, context);
  if (labels) out.loss = compute_loss(out.preds, prepare_labels(label(*labels, options_cls_.label()), pad_mask));
  return out;
}

TaskOutput ClassificationTaskImpl::forward_packed(const torch::Tensor& rows, const TokenIndex& idx,
                                                  const torch::Tensor& pad_mask, const torch::Tensor& context,
                                                  const Labels* labels) {
  // The head runs on the valid tokens only; padded slots of preds are 0.
  auto preds = net->forward_gathered(rows, context, idx.jet);
  TaskOutput out;
  out.preds = idx.scatter(preds);
  if (labels) {
    auto y = prepare_labels(label(*labels, options_cls_.label()), pad_mask);
    out.loss = compute_loss(preds, y.reshape({-1}).index_select(0, idx.flat));
  }
  return out;
}

torch::Tensor ClassificationTaskImpl::compute_loss(const torch::Tensor& preds, const torch::Tensor& y) {
  auto valid = y != -1;
  const int64_t num_classes = loss->kind() == LossKind::BCEWithLogits ? 2 : net->output_size();
  if ((valid & ((y < 0) | (y >= num_classes))).any().item<bool>()) {
    auto bad = y.masked_select(valid & ((y < 0) | (y >= num_classes)))[0].item<int64_t>();
    throw InputError("task '" + name() + "': label '" + options_cls_.label() + "' has value " + std::to_string(bad) +
                     " outside [0, " + std::to_string(num_classes) + ") (missing label_map entry?)");
  }
  // With no valid label torch's mean would be 0/0; keep the graph and give 0.
  if (!valid.any().item<bool>()) return preds.sum() * 0.0;
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

}  // namespace salt::models
