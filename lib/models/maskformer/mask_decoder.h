// salt.models.maskformer.MaskDecoder: num_objects learned queries read the encoded
// constituents through decoder layers (cross-attention queries <- constituents, with
// mask attention from the previous masks; query self-attention; a GLU; optionally
// constituents <- queries), then class_net gives each query a class (the last one
// "no object") and mask_net a mask over the constituents:
//   masks[b, q, l] = mask_net(q)[b, q] . x[b, l]   (padded constituents: lowest float).
// With labels, the queries are matched to the true objects (models/maskformer/mask_matching.h)
// and MaskFormerLoss (models/maskformer/maskformer_loss.h) plus the object regression tasks give
// the losses. Deliberate differences from salt are in docs/models.md.
#pragma once
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/mf_config.h"
#include "models/layers/attention.h"
#include "models/packing/common.h"
#include "models/layers/dense.h"
#include "models/layers/glu.h"
#include "models/maskformer/maskformer_loss.h"
#include "models/salt_state.h"
#include "models/maskformer/mask_matching.h"

#include "export/fwd.h"

namespace salt::models {

class TaskImpl;

struct MaskDecoderLayerOptions {
  explicit MaskDecoderLayerOptions(int64_t embed_dim = 0) : embed_dim_(embed_dim) {}
  TORCH_ARG(int64_t, embed_dim);
  TORCH_ARG(int64_t, n_heads) = 1;
  TORCH_ARG(bool, mask_attention) = true;
  TORCH_ARG(bool, bidirectional_ca) = true;
};

// salt's get_masks: mask_net(q) [B, M, E] . x [B, L, E] -> [B, M, L]; padded
// positions (pad_mask true) get the lowest finite value of the dtype.
torch::Tensor mask_logits(const torch::Tensor& x, const torch::Tensor& q, Dense& mask_net, const torch::Tensor& pad_mask);

class MaskDecoderLayerImpl : public torch::nn::Module {
 public:
  // mask_net is the decoder's (shared, not registered here: one set of parameters).
  MaskDecoderLayerImpl(const MaskDecoderLayerOptions& options, Dense mask_net);
  // q [B, M, E], kv [B, L, E], kv_mask [B, L] (true = padded) -> updated (q, kv).
  std::pair<torch::Tensor, torch::Tensor> forward(torch::Tensor q, torch::Tensor kv, const torch::Tensor& kv_mask);
  // forward() for one jet in an ONNX graph: q [M, E], kv [L, E] (no padding).
  std::pair<ox::Value, ox::Value> to_onnx(ox::Graph& g, const ox::Value& q, const ox::Value& kv);

  Attention q_ca{nullptr}, q_sa{nullptr}, kv_ca{nullptr};
  GLU q_dense{nullptr}, kv_dense{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};

 private:
  MaskDecoderLayerOptions options_;
  Dense mask_net_;
};
TORCH_MODULE(MaskDecoderLayer);

// What the decoder predicts (one set per layer with aux_loss).
struct ObjectPreds {
  torch::Tensor embed;         // [B, M, E] query embeddings
  torch::Tensor class_logits;  // [B, M, C + 1] (or [B, M, 1] for one class)
  torch::Tensor class_probs;   // [B, M, C + 1]
  torch::Tensor masks;         // [B, M, L] mask logits
  std::map<std::string, torch::Tensor> tasks;  // object task name -> [B, M, R]
};

struct MaskDecoderOutput {
  ObjectPreds objects;
  torch::Tensor x;  // [B, L, E] the constituents after the layers
  std::vector<ObjectPreds> intermediate;  // before each layer (aux_loss)
  torch::Tensor assignment;  // [B, M] query of each target slot (with labels); objects are in this order
};

// One jet's objects in an ONNX graph: the final queries [M, E], their class
// probabilities [M, C + 1] and mask logits over the real constituents [M, L].
struct OnnxObjects {
  ox::Value embed, class_probs, masks;
};

struct ObjectTargets;

struct MaskDecoderOptions {
  int64_t embed_dim = 0, num_layers = 0, num_objects = 0;
  MaskDecoderLayerOptions layer{0};
  MaskFormerLossOptions loss;
  std::map<std::string, double> matcher_weights;  // salt: loss_weights when absent
  std::vector<std::string> losses{"labels", "masks"};  // salt's MaskFormerLoss.losses
  bool aux_loss = false;
  std::string constituent_name;  // the input whose embeddings the masks cover
  config::MaskformerConfig mf;   // data.mf_config: how targets are built
};

class MaskDecoderImpl : public torch::nn::Module, public SaltStateExtras {
 public:
  MaskDecoderImpl(MaskDecoderOptions options, Dense class_net, Dense mask_net);
  // x: encoded constituents [B, L, E], pad_mask [B, L] (true = padded). Object tasks
  // run on the final queries. With targets: matching, objects put in target order
  // and `losses` filled (salt's names: object_class_ce, mask_ce, mask_dice, ... and
  // each object task's name).
  MaskDecoderOutput forward(const torch::Tensor& x, const torch::Tensor& pad_mask,
                            const std::vector<std::shared_ptr<TaskImpl>>& object_tasks, const Labels* labels,
                            const TensorMap& pad_masks, std::map<std::string, torch::Tensor>* losses);

  // forward() without labels for one jet in an ONNX graph: x [L, E], the encoded
  // constituents (all real). Object tasks are not run (the caller picks them).
  OnnxObjects to_onnx(ox::Graph& g, const ox::Value& x);

  const MaskDecoderOptions& options() const { return options_; }
  // salt's state_dict: layers.<i>.mask_net.* (the shared mask_net under every
  // layer) and mask_loss.empty_weight (the class weights of the loss).
  std::vector<std::pair<std::string, std::string>> state_aliases() const override;
  std::vector<std::pair<std::string, torch::Tensor>> salt_only_state() const override;
  // The matching of forward() with labels, for predictions made without: puts
  // `preds` in the order of the targets and returns the assignment [B, M].
  torch::Tensor match_to_targets(ObjectPreds& preds, const Labels& labels, const TensorMap& pad_masks,
                                 const std::vector<std::shared_ptr<TaskImpl>>& object_tasks) const;

  torch::Tensor inital_q;  // salt's spelling (state-dict key)
  Dense class_net{nullptr}, mask_net{nullptr};
  torch::nn::ModuleList layers{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};

 private:
  ObjectPreds predict(const torch::Tensor& q, const torch::Tensor& x, const torch::Tensor& pad_mask);
  MaskDecoderOptions options_;
};
TORCH_MODULE(MaskDecoder);

}  // namespace salt::models
