// SaltModel's ONNX export: the graph of forward() for a single jet whose
// constituents are all real (Athena passes only the selected tracks), so no masks.
#include <algorithm>

#include "core/errors.h"
#include "export/layers.h"
#include "models/maskformer/mask_decoder.h"
#include "models/maskformer/maskformer_outputs.h"
#include "models/salt_model.h"
#include "models/tasks/regression_task.h"

namespace salt::models {

namespace {

bool wanted(const std::vector<std::string>& tasks, const std::string& name) {
  return std::find(tasks.begin(), tasks.end(), name) != tasks.end();
}

const ox::Value& input_value(const OnnxModelInput& in, const std::string& name) {
  auto it = in.inputs.find(name);
  if (it == in.inputs.end()) throw UsageError("to_onnx: input '" + name + "' is not an input of the exported graph");
  return it->second;
}

// The rows of one constituent input among the tokens: segment = (offset [1], count [1]).
ox::Value segment_rows(ox::Graph& g, const ox::Value& tokens, const std::pair<ox::Value, ox::Value>& segment) {
  const auto& [offset, count] = segment;
  return g.op("Slice", {tokens, offset, g.op("Add", {offset, count}), g.ints({0})});
}

void add(std::vector<OnnxOutput>& to, std::vector<OnnxOutput> outputs, const TaskImpl& task) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].task = task.name();
    outputs[i].input = task.input_name();
    outputs[i].column = static_cast<int64_t>(i);
    to.push_back(std::move(outputs[i]));
  }
}

// salt's --object_name outputs: the leading object's regression values (the object
// task named "regression", as salt's exporter requires) and each constituent's object.
std::vector<OnnxOutput> object_outputs(ox::Graph& g, const OnnxModelInput& in, const OnnxObjects& objects,
                                       const std::vector<std::shared_ptr<TaskImpl>>& object_tasks,
                                       const MaskDecoderOptions& decoder) {
  std::shared_ptr<RegressionTaskImpl> regression;
  for (const auto& t : object_tasks)
    if (t->name() == "regression") regression = std::dynamic_pointer_cast<RegressionTaskImpl>(t);
  if (!regression)
    throw UsageError("to_onnx: --object_name needs a RegressionTask named 'regression' on input_name: objects "
                     "(the leading object is the one with the largest first target)");
  if (decoder.num_objects > 127)
    throw UsageError("to_onnx: --object_name: the int8 output " + in.model_name + "_" + in.object_name + "Index cannot number " +
                     std::to_string(decoder.num_objects) + " objects (at most 127)");
  const auto& targets = regression->targets();
  const auto values = regression->object_values_onnx(g, objects.embed);
  const auto mf = maskformer_outputs_onnx(g, objects.class_probs, objects.masks, values, decoder.num_objects,
                                          static_cast<int64_t>(targets.size()));
  std::vector<OnnxOutput> out;
  for (size_t i = 0; i < targets.size(); ++i) {
    OnnxOutput o{in.model_name + "_leading_" + in.object_name + "_" + targets[i], mf.leading[i]};
    o.object = true;
    o.task = regression->name();
    o.input = "objects";
    o.column = static_cast<int64_t>(i);
    out.push_back(o);
  }
  OnnxOutput index{in.model_name + "_" + in.object_name + "Index", mf.indices, true};
  index.object = true;
  index.task = "mask_decoder";
  index.input = decoder.constituent_name;
  out.push_back(index);
  return out;
}

}  // namespace

// The edge init net on the edge features [L_s, L_s, F] of one constituent input (a
// segment of the tokens), placed over all tokens [L, L, E] with zeros elsewhere,
// as forward's padding places them.
ox::Value SaltModelImpl::edge_embeddings(ox::Graph& g, const OnnxModelInput& in, const ox::Value& tokens,
                                         const std::pair<ox::Value, ox::Value>& segment) {
  const auto& name = edge_init_net_->input_name();
  const auto features = input_value(in, name);
  auto inputs = in.inputs;
  inputs[name] = g.op("Flatten", {features}, {{"axis", int64_t{2}}});  // [L_s * L_s, F]: the net takes rows
  const auto pair_dims = g.op("Slice", {g.op("Shape", {features}), g.ints({0}), g.ints({2})});
  auto edges = g.op("Reshape", {edge_init_net_->to_onnx(g, inputs),
                                g.op("Concat", {pair_dims, g.ints({edge_init_net_->output_size()})}, {{"axis", int64_t{0}}})},
                    {{"allowzero", int64_t{1}}});  // a jet without constituents: a literal [0, 0, E]
  const auto& [offset, count] = segment;
  const auto after = g.op("Sub", {g.op("Sub", {ox::dim0(g, tokens), offset}), count});
  const auto zero = g.ints({0});
  return g.op("Pad", {edges, g.op("Concat", {offset, offset, zero, after, after, zero}, {{"axis", int64_t{0}}})});
}

std::vector<OnnxOutput> SaltModelImpl::to_onnx(ox::Graph& g, const OnnxModelInput& in) {
  if (!merges_.empty()) throw UsageError("to_onnx: models with a merge_dict have no ONNX export yet");
  if (!in.object_name.empty() && !mask_decoder)
    throw UsageError("to_onnx: --object_name needs a MaskFormer model (model.model.init_args.mask_decoder and data.mf_config)");
  const auto p = in.inputs.find("parameters");
  const ox::Value params = p == in.inputs.end() ? ox::Value{} : p->second;
  ox::Value global_rep, tokens;
  OnnxObjects objects;
  std::map<std::string, std::pair<ox::Value, ox::Value>> segment;  // constituent input -> (offset [1], count [1])
  if (!pool_net) {
    global_rep = init_nets_.front()->to_onnx(g, in.inputs);
  } else {
    std::vector<ox::Value> parts;
    ox::Value offset = g.ints({0});
    for (auto& net : init_nets_) {
      parts.push_back(net->to_onnx(g, in.inputs));
      auto count = ox::dim0(g, input_value(in, net->input_name()));
      segment[net->input_name()] = {offset, count};
      offset = g.op("Add", {offset, count});
    }
    tokens = parts.size() == 1 ? parts.front() : g.op("Concat", parts, {{"axis", int64_t{0}}});
    const auto edges = edge_init_net_ ? edge_embeddings(g, in, tokens, segment.at(edge_input_)) : ox::Value{};
    if (encoder) tokens = encoder->to_onnx(g, tokens, params, edges);
    if (mask_decoder) {
      objects = mask_decoder->to_onnx(g, segment_rows(g, tokens, segment.at(mask_decoder->options().constituent_name)));
    }
    if (featurewise_global) {
      if (params.empty()) throw UsageError("to_onnx: featurewise nets need the `parameters` inputs");
      tokens = featurewise_global->to_onnx(g, params, tokens);
    }
    global_rep = pool_net->pool_onnx(g, tokens, objects.embed);
  }
  if (in.inputs.count("global")) global_rep = g.op("Concat", {global_rep, in.inputs.at("global")}, {{"axis", int64_t{-1}}});

  std::vector<OnnxOutput> jet, constituent;
  OnnxTaskInput task_in;
  task_in.raw_global = in.raw_global;
  task_in.global_variables = &in.global_variables;
  for (auto& task : tasks_) {
    if (!wanted(in.tasks, task->name())) continue;
    if (mask_decoder && task->input_name() == "objects")
      throw UsageError("to_onnx: task '" + task->name() + "' runs on the mask decoder's objects; its leading object is "
                       "exported with --object_name");
    if (task->input_name() == global_object_) {
      task_in.x = global_rep;
      task_in.context.clear();
      add(jet, task->to_onnx(g, task_in, in.model_name), *task);
      continue;
    }
    auto s = segment.find(task->input_name());
    if (s == segment.end())
      throw UsageError("to_onnx: task '" + task->name() + "' reads '" + task->input_name() + "', which has no init net");
    task_in.x = segment_rows(g, tokens, s->second);
    task_in.context = global_rep;
    add(constituent, task->to_onnx(g, task_in, in.model_name), *task);
  }
  jet.insert(jet.end(), constituent.begin(), constituent.end());
  if (!in.object_name.empty()) {
    auto obj = object_outputs(g, in, objects, object_tasks_, mask_decoder->options());
    jet.insert(jet.end(), obj.begin(), obj.end());
  }
  return jet;
}

}  // namespace salt::models
