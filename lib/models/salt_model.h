// salt.models.SaltModel: init nets -> encoder (optional; none = deep sets, DIPS)
// -> pooling (optional; none = a jet-only model like DL1) -> tasks.
// Several constituent types: their embeddings are concatenated along the sequence
// in the order of the init nets (then the encoder's registers), masks alike.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "models/layers/featurewise.h"
#include "models/layers/init_net.h"
#include "models/layers/pool_net.h"
#include "models/layers/transformer.h"
#include "models/maskformer/mask_decoder.h"
#include "models/packing/common.h"
#include "models/tasks/task.h"

namespace salt::models {

struct SaltModelOutput {
  // input name -> task name -> raw task output (TaskOutput::preds)
  std::map<std::string, std::map<std::string, torch::Tensor>> preds;
  // task name -> weighted loss (only with labels)
  std::map<std::string, torch::Tensor> losses;
  Sequence sequence;         // encoded constituents (x undefined for a jet-only model)
  torch::Tensor global_rep;  // [B, D]: pooled vector (or the jet embedding)
  MaskDecoderOutput objects;  // with a mask decoder (objects.objects.class_probs defined)
};

// What the model's ONNX export gets: the graph inputs (normalised) by salt input
// name, the raw global object and its variables (for regression denominators),
// the tasks to export and the output name prefix.
struct OnnxModelInput {
  std::map<std::string, ox::Value> inputs;
  ox::Value raw_global;
  std::vector<std::string> global_variables;
  std::vector<std::string> tasks;
  std::string model_name;
  // salt's --object_name (MaskFormer): also the leading object's regression values
  // <model>_leading_<object>_<target> and each constituent's <model>_<object>Index.
  std::string object_name;
};

class SaltModelImpl : public torch::nn::Module {
 public:
  // encoder and pool_net (any pooling: pool_net.h) may be empty holders (nullptr). Throws UsageError for
  // salt's consistency rules (unique names, equal embedding sizes, pooling needed
  // for constituents).
  // featurewise_global (may be empty): featurewise_nets' `layer: global`, on the
  // encoder output before pooling and the constituent tasks.
  SaltModelImpl(std::string global_object, std::vector<InitNet> init_nets, Transformer encoder,
                PoolNet pool_net, std::vector<std::shared_ptr<TaskImpl>> tasks,
                Featurewise featurewise_global = nullptr, MaskDecoder mask_decoder = nullptr,
                InitNet edge_init_net = nullptr);

  // inputs: normalised; pad_masks: constituent name -> bool [B, L] (true = padded;
  // missing = all valid); labels nullptr for inference. `context`: the batch's host
  // copies, static rows and the kernels' choices (forward_context.h), passed down to
  // the packing, the encoder's attention and the tasks; the default reads the
  // device, packs plainly and takes the kernels' defaults.
  SaltModelOutput forward(const TensorMap& inputs, const TensorMap& pad_masks, const Labels* labels = nullptr,
                          const ForwardContext& context = {});

  // forward() + the tasks' get_onnx for one jet without padding, in an ONNX graph
  // (models/salt_model_onnx.cpp): the jet-level outputs of the chosen tasks in task
  // order, then the per-constituent ones, then the object ones. UsageError for what cannot be exported.
  std::vector<OnnxOutput> to_onnx(ox::Graph& g, const OnnxModelInput& in);

  // salt's merge_dict: {merged input: [constituent inputs]}. The members' embeddings,
  // masks and labels are concatenated along the sequence (in the listed order) into
  // one input that tasks name; the members no longer exist on their own.
  // edge_init_net (may be empty): salt's edge_init_nets (one net), embedding the edge
  // features `_edge_features_<input>` [B, L, L, F] -> [B, L, L, edge_embed_dim] for
  // the encoder's EdgeAttention; registered after init_nets, as salt's.
  // The constituent input the edge features belong to ("" without edge_init_nets).
  const std::string& edge_input() const { return edge_input_; }

  void set_merge_dict(std::vector<std::pair<std::string, std::vector<std::string>>> merges);
  const std::vector<std::pair<std::string, std::vector<std::string>>>& merge_dict() const { return merges_; }
  // labels plus each merged input's labels: its first member's, concatenated over the
  // members along the sequence (salt's SaltModel.forward); InputError if one lacks a label.
  Labels merged_labels(const Labels& labels) const;

  const std::string& global_object() const { return global_object_; }
  const std::vector<std::shared_ptr<TaskImpl>>& task_list() const { return tasks_; }
  const std::vector<InitNet>& init_net_list() const { return init_nets_; }
  const std::vector<std::shared_ptr<TaskImpl>>& object_tasks() const { return object_tasks_; }

  torch::nn::ModuleList init_nets{nullptr}, tasks{nullptr}, edge_init_nets{nullptr};
  Transformer encoder{nullptr};
  PoolNet pool_net{nullptr};
  Featurewise featurewise_global{nullptr};
  MaskDecoder mask_decoder{nullptr};

 private:
  // One line naming what is wrong with an edge init net for this encoder; sets edge_input_.
  void check_edge_init_net(const InitNet& net, const Transformer& encoder_in);
  std::string global_object_;
  std::vector<InitNet> init_nets_;
  std::vector<std::shared_ptr<TaskImpl>> tasks_;
  std::vector<std::shared_ptr<TaskImpl>> object_tasks_;  // tasks on "objects", run by the mask decoder
  std::vector<std::pair<std::string, std::vector<std::string>>> merges_;
  ox::Value edge_embeddings(ox::Graph& g, const OnnxModelInput& in, const ox::Value& tokens,
                            const std::pair<ox::Value, ox::Value>& segment);
  InitNet edge_init_net_{nullptr};
  std::string edge_input_;
};
TORCH_MODULE(SaltModel);

}  // namespace salt::models
