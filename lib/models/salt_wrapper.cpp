#include "models/salt_wrapper.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/errors.h"
#include "models/maskformer/object_targets.h"

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

ModelOutput SaltWrapperImpl::forward(const TensorMap& inputs, const TensorMap& pad_masks, const Labels* labels,
                                     const ForwardContext& context) {
  SaltModelOutput result;
  if (edge_constructor_) {
    TensorMap with_edges = inputs;
    edge_constructor_->add_to(with_edges);
    result = model->forward(norm->forward(with_edges), pad_masks, labels, context);
  } else {
    result = model->forward(norm->forward(inputs), pad_masks, labels, context);
  }
  ModelOutput out;
  out.preds = std::move(result.preds);
  out.losses = std::move(result.losses);
  out.global_rep = result.global_rep;
  out.sequence = std::move(result.sequence);
  out.objects = std::move(result.objects);
  if (labels && !out.losses.empty()) out.loss = total_loss(out.losses);
  return out;
}

torch::Tensor SaltWrapperImpl::total_loss(const std::map<std::string, torch::Tensor>& losses) const {
  if (losses.empty()) return {};
  torch::Tensor total;
  for (const auto& [_, l] : losses) total = !total.defined() ? l : (loss_mode_ == "GLS" ? total * l : total + l);
  if (loss_mode_ == "GLS") total = torch::pow(total, 1.0 / static_cast<double>(losses.size()));
  return total;
}

// Columns of a merged input go back to its members (the files have no merged
// dataset): the first L_1 slots to the first member, and so on.
void SaltWrapperImpl::split_merged(std::map<std::string, std::map<std::string, PredictionColumns>>& cols,
                                   const TensorMap& pad_masks) const {
  for (const auto& [name, members] : model->merge_dict()) {
    auto it = cols.find(name);
    if (it == cols.end()) continue;
    int64_t start = 0;
    for (const auto& m : members) {
      auto mask = pad_masks.find(m);
      if (mask == pad_masks.end()) throw InputError("merge_dict." + name + ": no pad mask for '" + m + "'");
      const int64_t width = mask->second.size(1);
      for (const auto& [task, c] : it->second) cols[m][task] = PredictionColumns{c.names, c.values.narrow(1, start, width)};
      start += width;
    }
    cols.erase(name);
  }
}

std::map<std::string, std::map<std::string, PredictionColumns>> SaltWrapperImpl::predictions(
    const ModelOutput& out, const TensorMap& pad_masks, const Labels* labels) const {
  std::map<std::string, std::map<std::string, PredictionColumns>> cols;
  Labels merged;
  if (labels && !model->merge_dict().empty()) {
    merged = model->merged_labels(*labels);
    labels = &merged;
  }
  // A MaskFormer's object tasks: object_columns, in the truth's slot order.
  const bool objects_apart = model->mask_decoder && out.objects.objects.class_probs.defined();
  for (const auto& task : model->task_list()) {
    auto in = out.preds.find(task->input_name());
    if (in == out.preds.end() || !in->second.count(task->name())) continue;
    if (objects_apart && task->input_name() == "objects") continue;
    torch::Tensor mask;
    if (task->input_name() != model->global_object() && task->input_name() != "objects") {
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
  split_merged(cols, pad_masks);
  if (objects_apart) object_columns(cols, out, pad_masks, labels);
  return cols;
}

void SaltWrapperImpl::object_columns(std::map<std::string, std::map<std::string, PredictionColumns>>& cols,
                                     const ModelOutput& out, const TensorMap& pad_masks, const Labels* labels) const {
  const auto& o = model->mask_decoder->options();
  ObjectPreds p = out.objects.objects;
  // Objects predicted without labels are in query order: match them as training does.
  if (labels && !out.objects.assignment.defined())
    model->mask_decoder->match_to_targets(p, *labels, pad_masks, model->object_tasks());
  // salt's writer: the file's fields (the writer copies them), then the object
  // tasks' outputs in task order, the class probabilities, and the target class.
  auto& objects = cols["objects"];
  char key[16];
  int i = 0;
  for (const auto& task : model->object_tasks()) {
    std::snprintf(key, sizeof key, "1_%04d_", i++);
    objects[key + task->name()] = task->predict(p.tasks.at(task->name()), {}, labels, name_);
  }
  PredictionColumns probs;
  for (const auto& c : o.mf.object.object_classes) probs.names.push_back(name_ + "_p" + c.name);
  probs.values = p.class_probs.detach().to(torch::kFloat32);
  if (p.class_probs.size(-1) != static_cast<int64_t>(probs.names.size())) probs.names.resize(p.class_probs.size(-1));
  objects[kObjectClassProbs] = probs;
  const auto masks = p.masks.detach().to(torch::kCPU, torch::kFloat32);  // [B, M, L], in target order with labels
  torch::Tensor truth;
  if (labels) {
    const auto t = object_targets(*labels, pad_masks, o.mf, o.num_objects);
    objects["3_class_label"] = PredictionColumns{{"class_label"}, t.object_class.unsqueeze(-1).to(torch::kCPU)};
    objects[kObjectSourceSlots] = PredictionColumns{{}, t.source_slot.unsqueeze(-1).to(torch::kCPU)};
    truth = t.masks.to(torch::kCPU, torch::kFloat32);
  }
  // Each constituent's object: the object whose mask holds it (p > 0.5; the last
  // such object when several do), -2 when none does, -1 for padded constituents.
  // As salt's indices_from_mask, the indices are then shifted so that the smallest
  // in the whole batch is 0 (padded constituents counted, as there): a batch in which
  // object 0 holds nothing is written from 0 all the same.
  const auto held = masks.sigmoid() > 0.5;
  const int64_t m = held.size(1);
  auto index = torch::full({held.size(0), held.size(2)}, -2, torch::kInt64);
  for (int64_t k = 0; k < m; ++k) index.masked_fill_(held.select(1, k), k);
  const auto assigned = index >= 0;
  if (assigned.any().item<bool>()) index.sub_(assigned.to(torch::kInt64) * index.masked_select(assigned).min());
  if (auto pm = pad_masks.find(o.constituent_name); pm != pad_masks.end())
    index.masked_fill_(pm->second.to(torch::kCPU).to(torch::kBool), -1);
  cols[o.constituent_name]["mask_index"] = PredictionColumns{{name_ + "_MaskIndex"}, index.unsqueeze(-1)};
  // object_masks: [B, M * L] slots, row-major in (object, constituent): truth_mask as
  // salt's int64, then mask_logits (the writer orders columns by these keys).
  if (!truth.defined()) truth = torch::zeros_like(masks);
  cols["object_masks"]["0_truth_mask"] = PredictionColumns{{"truth_mask"}, truth.to(torch::kInt64).flatten(1, 2).unsqueeze(-1)};
  cols["object_masks"]["1_mask_logits"] = PredictionColumns{{"mask_logits"}, masks.flatten(1, 2).unsqueeze(-1)};
}

std::map<std::string, std::vector<std::string>> SaltWrapperImpl::required_labels() const {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& task : model->task_list()) {
    // A merged input's labels are its members' (merge_dict).
    std::vector<std::string> inputs{task->input_name()};
    for (const auto& [name, members] : model->merge_dict())
      if (name == task->input_name()) inputs = members;
    for (const auto& input : inputs) {
      auto& v = out[input];
      for (const auto& l : task->label_names())
        if (std::find(v.begin(), v.end(), l) == v.end()) v.push_back(l);
    }
  }
  if (model->mask_decoder) {  // the objects and the constituents' link to them (salt's CLI adds these)
    const auto& mf = model->mask_decoder->options().mf;
    auto add = [&](const std::string& input, const std::string& l) {
      auto& v = out[input];
      if (std::find(v.begin(), v.end(), l) == v.end()) v.push_back(l);
    };
    add("objects", mf.object.id_label);
    if (mf.object.class_label) add("objects", *mf.object.class_label);
    for (const auto& f : mf.object.selection_fields()) add("objects", f);
    add(mf.constituent.name, mf.constituent.id_label);
  }
  return out;
}

void SaltWrapperImpl::set_attn_backend(const std::string& attn_type) {
  if (model->encoder) model->encoder->set_backend(attn_type);
}

}  // namespace salt::models
