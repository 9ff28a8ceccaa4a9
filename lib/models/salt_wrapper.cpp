#include "models/salt_wrapper.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace salt::models {

SaltWrapperImpl::SaltWrapperImpl(SaltModel model_in, InputNorm norm_in, std::string loss_mode, std::string name)
    : torch::nn::Module("ModelWrapper"), loss_mode_(std::move(loss_mode)), name_(std::move(name)) {
  if (loss_mode_ != "wsum" && loss_mode_ != "GLS")
    throw UsageError("model.loss_mode: '" + loss_mode_ + "' is not one of wsum, GLS");
  if (loss_mode_ == "GLS")
    for (const auto& t : model_in->task_list())
      if (t->weight() != 1.0)
        throw UsageError("model.loss_mode GLS does not use task weights: set the weight of task '" + t->name() +
                         "' to 1 (it is " + std::to_string(t->weight()) + ")");
  // salt's LightningModule assigns `model` before `norm`.
  model = register_module("model", model_in);
  norm = register_module("norm", norm_in);
}

ModelOutput SaltWrapperImpl::forward(const TensorMap& inputs, const TensorMap& pad_masks, const Labels* labels) {
  auto result = model->forward(norm->forward(inputs), pad_masks, labels);
  ModelOutput out;
  out.preds = std::move(result.preds);
  out.losses = std::move(result.losses);
  out.global_rep = result.global_rep;
  out.sequence = std::move(result.sequence);
  if (labels && !out.losses.empty()) out.loss = total_loss(out.losses);
  return out;
}

ModelOutput SaltWrapperImpl::forward(const Batch& batch, bool with_labels) {
  const bool use = with_labels && !batch.labels.empty();
  return forward(batch.inputs, batch.pad_masks, use ? &batch.labels : nullptr);
}

torch::Tensor SaltWrapperImpl::total_loss(const std::map<std::string, torch::Tensor>& losses) const {
  if (losses.empty()) return {};
  torch::Tensor total;
  for (const auto& [_, l] : losses) total = !total.defined() ? l : (loss_mode_ == "GLS" ? total * l : total + l);
  if (loss_mode_ == "GLS") total = torch::pow(total, 1.0 / static_cast<double>(losses.size()));
  return total;
}

std::map<std::string, std::map<std::string, PredictionColumns>> SaltWrapperImpl::predictions(
    const ModelOutput& out, const TensorMap& pad_masks, const Labels* labels) const {
  std::map<std::string, std::map<std::string, PredictionColumns>> cols;
  for (const auto& task : model->task_list()) {
    auto in = out.preds.find(task->input_name());
    if (in == out.preds.end() || !in->second.count(task->name())) continue;
    torch::Tensor mask;
    if (task->input_name() != model->global_object()) {
      // The caller's mask, or the one the model used (all valid when none was given).
      auto m = pad_masks.find(task->input_name());
      if (m != pad_masks.end()) {
        mask = m->second.to(torch::kBool);
      } else if (const Segment* seg = out.sequence.find(task->input_name())) {
        mask = seg->mask;
      }
    }
    cols[task->input_name()][task->name()] = task->predict(in->second.at(task->name()), mask, labels, name_);
  }
  return cols;
}

std::map<std::string, std::vector<std::string>> SaltWrapperImpl::required_labels() const {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& task : model->task_list()) {
    auto& v = out[task->input_name()];
    for (const auto& l : task->label_names())
      if (std::find(v.begin(), v.end(), l) == v.end()) v.push_back(l);
  }
  return out;
}

void SaltWrapperImpl::set_attn_backend(const std::string& attn_type) {
  if (model->encoder) model->encoder->set_backend(attn_type);
}

}  // namespace salt::models
