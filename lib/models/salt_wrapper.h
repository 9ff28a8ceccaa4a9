// The top-level module, laid out like salt's Lightning ModelWrapper so that
// state-dict keys match salt's checkpoints: `model` (SaltModel) and `norm`
// (InputNorm) — e.g. `model.encoder.layers.0.attn.fn.in_proj_weight`,
// `norm.tracks_means`. Normalises the inputs, runs the model and combines the
// task losses by loss_mode.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>

#include "models/layers/edge_features.h"
#include "models/layers/input_norm.h"
#include "models/salt_model.h"

namespace salt::models {

struct ModelOutput {
  // input name -> task name -> raw task output: logits [B, C] / [B, L, C], edge
  // logits [E, 1], scaled regression [B, R] / [B, L, R]
  std::map<std::string, std::map<std::string, torch::Tensor>> preds;
  // task name -> weighted task loss (only when labels were given)
  std::map<std::string, torch::Tensor> losses;
  torch::Tensor loss;  // total: wsum or GLS of `losses`; undefined without labels
  torch::Tensor global_rep;
  Sequence sequence;
  MaskDecoderOutput objects;  // with a mask decoder
};

class SaltWrapperImpl : public torch::nn::Module {
 public:
  // loss_mode: "wsum" (sum of weighted losses) or "GLS" (geometric mean; every
  // task weight must be 1). name: prefix of the output columns ("GN2" -> GN2_pb).
  SaltWrapperImpl(SaltModel model, InputNorm norm, std::string loss_mode = "wsum", std::string name = "salt");

  // Raw (un-normalised) inputs as the loader gives them; `context` as SaltModel::forward's.
  ModelOutput forward(const TensorMap& inputs, const TensorMap& pad_masks, const Labels* labels = nullptr,
                      const ForwardContext& context = {});

  torch::Tensor total_loss(const std::map<std::string, torch::Tensor>& losses) const;

  // salt's prediction columns per input and task (see TaskImpl::predict), ready
  // for the test output file, each input's in the order salt's writer puts them
  // (the map's key order). labels matter for denominator-scaled regression and for
  // a MaskFormer's objects: their columns come in the slot order of the truth, and
  // under kObjectSourceSlots the file's object slot each slot holds (-1: none),
  // which the writer reads rather than writes.
  std::map<std::string, std::map<std::string, PredictionColumns>> predictions(const ModelOutput& out,
                                                                              const TensorMap& pad_masks,
                                                                              const Labels* labels = nullptr) const;

  // input name -> the label names the tasks read (for the data loader); a merged
  // input's labels are asked of its members.
  std::map<std::string, std::vector<std::string>> required_labels() const;

  static constexpr const char* kObjectSourceSlots = "source_slots";
  static constexpr const char* kObjectClassProbs = "2_object_class_probs";  // [B, M, classes]

  void set_attn_backend(const std::string& attn_type);
  // data.edge_constructors: edge features computed from the raw inputs before the
  // normalisation (salt's ModelWrapper runs its EdgeConstructor first).
  void set_edge_constructor(EdgeConstructor constructor) { edge_constructor_ = std::move(constructor); }
  const std::optional<EdgeConstructor>& edge_constructor() const { return edge_constructor_; }

  const std::string& loss_mode() const { return loss_mode_; }
  const std::string& model_name() const { return name_; }

  SaltModel model{nullptr};
  InputNorm norm{nullptr};
  // muP (models/mup.h): parameters with two width dimensions -> width multiplier;
  // MuAdamW divides their learning rate by it. Empty without model.mup_config.
  std::map<std::string, double> mup_width_mults;

 private:
  // The mask decoder's columns (salt's PredictionWriter with write_objects):
  // objects: <name>_p<class> and class_label (the target class, with labels);
  // the constituents: <name>_MaskIndex; object_masks [B, M * L]: truth_mask, mask_logits.
  void object_columns(std::map<std::string, std::map<std::string, PredictionColumns>>& cols, const ModelOutput& out,
                      const TensorMap& pad_masks, const Labels* labels) const;
  void split_merged(std::map<std::string, std::map<std::string, PredictionColumns>>& cols,
                    const TensorMap& pad_masks) const;
  std::string loss_mode_;
  std::string name_;
  std::optional<EdgeConstructor> edge_constructor_;
};
TORCH_MODULE(SaltWrapper);

}  // namespace salt::models
