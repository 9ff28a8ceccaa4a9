#include "models/tasks/task.h"

#include "core/errors.h"
#include "models/model_context.h"
#include "models/registry.h"

#include "export/graph.h"

namespace salt::models {

TaskImpl::TaskImpl(const std::string& type, const TaskOptions& options) : torch::nn::Module(type), options_(options) {
  net = register_module("net", Dense(options.dense()));
  loss = register_module("loss", Loss(options.loss()));
}

bool TaskImpl::labels_replayable(const Labels&, const torch::Tensor&, const HostTwins&) const { return true; }

TaskOutput TaskImpl::forward_packed(const torch::Tensor& rows, const TokenIndex& idx, const torch::Tensor& pad_mask,
                                    const torch::Tensor& context, const Labels* labels,
                                    const ForwardContext& forward_context) {
  return forward(idx.scatter(rows), pad_mask, context, labels, forward_context);
}

void finish_task_base(TaskBaseConfig& c, const BuildContext& ctx, bool pairwise) {
  const auto& name = c.task.name();
  const auto& input = c.task.input_name();
  const bool jet_level = input == ctx.model->global_object;
  const bool objects = input == "objects" && ctx.objects_dim > 0;  // a MaskDecoder's queries
  if (!jet_level && !objects && !ctx.constituents.count(input))
    throw UsageError(ctx.arg("input_name") + ": task '" + name + "' reads '" + input + "', which is neither the global " +
                     "object nor an init net input" + (input == "objects" ? " (objects need a mask_decoder)" : ""));
  if (pairwise && jet_level)
    throw UsageError(ctx.arg("input_name") + ": VertexingTask needs constituents, not '" + input + "'");
  if (pairwise && objects) throw UsageError(ctx.arg("input_name") + ": VertexingTask needs constituents, not objects");
  const int64_t expected_input =
      jet_level ? ctx.global_dim : objects ? ctx.objects_dim : (pairwise ? 2 : 1) * ctx.constituent_dim;
  auto& dense = c.task.dense();
  if (dense.input_size() < 0) dense.input_size(expected_input);
  if (dense.input_size() != expected_input)
    throw UsageError(ctx.arg("dense_config.input_size") + ": " + std::to_string(dense.input_size()) +
                     " does not match the " + std::to_string(expected_input) + " features task '" + name + "' receives");
  if (objects && dense.context_size() != 0)
    throw UsageError(ctx.arg("dense_config.context_size") + ": tasks on objects read the query embeddings alone (no context)");
  if (dense.context_size() != 0 && dense.context_size() != ctx.global_dim && !jet_level)
    throw UsageError(ctx.arg("dense_config.context_size") + ": " + std::to_string(dense.context_size()) +
                     " does not match the pooled vector size " + std::to_string(ctx.global_dim));
  c.task.loss(build_component<LossOptions>(c.loss, ctx.at(ctx.arg("loss"))));
}

void finish_sample_weight(TaskBaseConfig& c, const BuildContext& ctx) {
  if (!c.task.sample_weight()) return;
  c.task.sample_weight_key = ctx.arg("sample_weight");
  if (c.task.loss().reduction() != "none")
    throw UsageError(ctx.arg("sample_weight") + ": sample weights need the loss's reduction: none (got '" +
                     c.task.loss().reduction() + "'), as in salt");
}

torch::Tensor TaskImpl::sample_weights(const Labels& labels) const {
  if (!sample_weight()) return {};
  return label(labels, *sample_weight()).to(torch::kFloat32);
}

const torch::Tensor& TaskImpl::label(const Labels& labels, const std::string& label_name) const {
  auto in = labels.find(input_name());
  if (in != labels.end()) {
    auto it = in->second.find(label_name);
    if (it != in->second.end()) return it->second;
  }
  throw InputError("task '" + name() + "': label '" + label_name + "' of '" + input_name() + "' missing from the batch");
}


std::vector<OnnxOutput> TaskImpl::to_onnx(ox::Graph&, const OnnxTaskInput&, const std::string&) {
  throw UsageError("to_onnx: task '" + name() + "' (" + torch::nn::Module::name() + ") has no ONNX export");
}

}  // namespace salt::models
