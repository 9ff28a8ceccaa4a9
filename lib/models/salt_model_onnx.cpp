// SaltModel's ONNX export: the graph of forward() for a single jet whose
// constituents are all real (Athena passes only the selected tracks), so no masks.
#include <algorithm>

#include "core/errors.h"
#include "export/layers.h"
#include "models/salt_model.h"

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

void add(std::vector<OnnxOutput>& to, std::vector<OnnxOutput> outputs, const TaskImpl& task) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].task = task.name();
    outputs[i].input = task.input_name();
    outputs[i].column = static_cast<int64_t>(i);
    to.push_back(std::move(outputs[i]));
  }
}

}  // namespace

std::vector<OnnxOutput> SaltModelImpl::to_onnx(ox::Graph& g, const OnnxModelInput& in) {
  if (!merges_.empty()) throw UsageError("to_onnx: models with a merge_dict have no ONNX export yet");
  if (mask_decoder) throw UsageError("to_onnx: MaskFormer models (a mask_decoder) have no ONNX export yet");
  if (edge_init_nets) throw UsageError("to_onnx: models with edge features (edge_init_nets) have no ONNX export yet");
  const auto p = in.inputs.find("parameters");
  const ox::Value params = p == in.inputs.end() ? ox::Value{} : p->second;
  ox::Value global_rep, tokens;
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
    if (encoder) tokens = encoder->to_onnx(g, tokens, params);
    if (featurewise_global) {
      if (params.empty()) throw UsageError("to_onnx: featurewise nets need the `parameters` inputs");
      tokens = featurewise_global->to_onnx(g, params, tokens);
    }
    global_rep = pool_net->to_onnx(g, tokens);
  }
  if (in.inputs.count("global")) global_rep = g.op("Concat", {global_rep, in.inputs.at("global")}, {{"axis", int64_t{-1}}});

  std::vector<OnnxOutput> jet, constituent;
  OnnxTaskInput task_in;
  task_in.raw_global = in.raw_global;
  task_in.global_variables = &in.global_variables;
  for (auto& task : tasks_) {
    if (!wanted(in.tasks, task->name())) continue;
    if (task->input_name() == global_object_) {
      task_in.x = global_rep;
      task_in.context.clear();
      add(jet, task->to_onnx(g, task_in, in.model_name), *task);
      continue;
    }
    auto s = segment.find(task->input_name());
    if (s == segment.end())
      throw UsageError("to_onnx: task '" + task->name() + "' reads '" + task->input_name() + "', which has no init net");
    const auto& [offset, count] = s->second;
    task_in.x = g.op("Slice", {tokens, offset, g.op("Add", {offset, count}), g.ints({0})});
    task_in.context = global_rep;
    add(constituent, task->to_onnx(g, task_in, in.model_name), *task);
  }
  jet.insert(jet.end(), constituent.begin(), constituent.end());
  return jet;
}

}  // namespace salt::models
