// salt.models.ClassificationTask: CrossEntropy (class weights, ignore_index -1;
// padded slots and label -2 ignored; `label_map` remaps labels first) or
// BCEWithLogits for a single output. Inference: softmax (jets), masked softmax
// (constituents, padded -> 0), sigmoid for BCE.
#pragma once
#include <map>
#include <optional>

#include "models/tasks/task.h"

namespace salt::models {

using LabelMap = std::map<int64_t, int64_t>;

struct ClassificationOptions {
  explicit ClassificationOptions(std::string label = "") : label_(std::move(label)) {}
  TORCH_ARG(std::string, label);
  TORCH_ARG(std::vector<std::string>, class_names);  // must match the output size
  TORCH_ARG(std::optional<LabelMap>, label_map) = std::nullopt;
};

class ClassificationTaskImpl : public TaskImpl {
 public:
  // Throws UsageError if class_names doesn't match the number of outputs or the
  // class weights don't match the number of classes.
  ClassificationTaskImpl(const TaskOptions& task, const ClassificationOptions& options);
  TaskOutput forward(const torch::Tensor& x, const torch::Tensor& pad_mask, const torch::Tensor& context,
                     const Labels* labels, const ForwardContext& forward_context) override;
  TaskOutput forward_packed(const torch::Tensor& rows, const TokenIndex& idx, const torch::Tensor& pad_mask,
                            const torch::Tensor& context, const Labels* labels,
                            const ForwardContext& forward_context) override;
  PredictionColumns predict(const torch::Tensor& preds, const torch::Tensor& pad_mask, const Labels* labels,
                            const std::string& model_name) const override;
  // The label, then the sample weight if any.
  std::vector<OnnxOutput> to_onnx(ox::Graph& g, const OnnxTaskInput& in, const std::string& model_name) override;
  std::vector<std::string> label_names() const override;
  // A label outside [0, classes) throws; false when no label is valid (forward's
  // loss is then 0 by another path).
  bool labels_replayable(const Labels& labels, const torch::Tensor& pad_mask, const HostTwins& twins) const override;
  const std::vector<std::string>& class_names() const { return options_cls_.class_names(); }
  // Labels as the loss sees them: remapped, -1 where ignored (padded, label -2).
  torch::Tensor prepare_labels(const torch::Tensor& raw, const torch::Tensor& pad_mask) const;

 private:
  // prepare_labels on the host copies of raw and pad_mask among `twins`
  // (host_twins.h; may be null); undefined when either has none.
  torch::Tensor host_labels(const torch::Tensor& raw, const torch::Tensor& pad_mask, const HostTwins* twins) const;
  // Weighted loss of preds [N, C] (or [B, L, C]) against prepared labels [N] ([B, L]).
  // w: sample weights shaped like y (undefined: none); entries: the count salt's
  // mean divides the weighted loss by (all B or B x L entries, ignored ones too).
  // host_y: the same labels' valid entries on the host, if known (any shape): the
  // range check then reads them instead of waiting for the device.
  torch::Tensor compute_loss(const torch::Tensor& preds, const torch::Tensor& y, const torch::Tensor& w,
                             int64_t entries, const torch::Tensor& host_y);
  torch::Tensor per_entry_loss(const torch::Tensor& preds, const torch::Tensor& y, const torch::Tensor& valid);
  // The range check of prepared labels (their host copy when on_host, else the
  // device's, read once): throws InputError for a label outside [0, classes);
  // whether any label is valid.
  bool check_labels(const torch::Tensor& checked, bool on_host) const;
  ClassificationOptions options_cls_;
};

}  // namespace salt::models
