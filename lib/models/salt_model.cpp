#include "models/salt_model.h"

#include <set>

#include "core/errors.h"

namespace salt::models {

SaltModelImpl::SaltModelImpl(std::string global_object, std::vector<InitNet> init_net_list, Transformer encoder_in,
                             GlobalAttentionPooling pool_in, std::vector<std::shared_ptr<TaskImpl>> task_list)
    : torch::nn::Module("SaltModel"), global_object_(std::move(global_object)), init_nets_(std::move(init_net_list)),
      tasks_(std::move(task_list)) {
  if (init_nets_.empty()) throw UsageError("SaltModel: init_nets is empty");
  std::set<std::string> names;
  for (const auto& n : init_nets_) {
    if (!names.insert(n->input_name()).second)
      throw UsageError("SaltModel: two init_nets for input '" + n->input_name() + "' (input_name must be unique)");
    if (n->output_size() != init_nets_.front()->output_size())
      throw UsageError("SaltModel: init_nets must share one output_size (" + init_nets_.front()->input_name() + ": " +
                       std::to_string(init_nets_.front()->output_size()) + ", " + n->input_name() + ": " +
                       std::to_string(n->output_size()) + ")");
  }
  names.clear();
  for (const auto& t : tasks_)
    if (!names.insert(t->name()).second) throw UsageError("SaltModel: two tasks named '" + t->name() + "'");
  if (!pool_in) {
    if (encoder_in) throw UsageError("SaltModel: pool_net must be set if encoder is set");
    if (init_nets_.size() != 1) throw UsageError("SaltModel: pool_net must be set if more than one init_net is set");
    if (init_nets_.front()->input_name() != global_object_)
      throw UsageError("SaltModel: without pool_net the only init_net must embed the global object '" + global_object_ +
                       "', not '" + init_nets_.front()->input_name() + "'");
  }

  // Registration order follows salt's attribute order (init_nets, tasks, encoder, pool_net).
  init_nets = register_module("init_nets", torch::nn::ModuleList());
  for (auto& n : init_nets_) init_nets->push_back(n);
  tasks = register_module("tasks", torch::nn::ModuleList());
  for (auto& t : tasks_) tasks->push_back(t);
  if (encoder_in) encoder = register_module("encoder", encoder_in);
  if (pool_in) pool_net = register_module("pool_net", pool_in);
}

SaltModelOutput SaltModelImpl::forward(const TensorMap& inputs, const TensorMap& pad_masks, const Labels* labels) {
  SaltModelOutput out;
  if (!pool_net) {
    out.global_rep = init_nets_.front()->forward(inputs);
  } else {
    std::vector<torch::Tensor> embeddings;
    for (auto& net : init_nets_) {
      auto x = net->forward(inputs);
      if (x.dim() != 3)
        throw InputError("SaltModel: input '" + net->input_name() + "' is not a constituent input (shape [B, L, F])");
      auto it = pad_masks.find(net->input_name());
      auto mask = it != pad_masks.end() ? it->second.to(torch::kBool)
                                        : torch::zeros({x.size(0), x.size(1)}, torch::dtype(torch::kBool).device(x.device()));
      embeddings.push_back(x);
      out.sequence.segments.push_back({net->input_name(), mask});
    }
    out.sequence.x = torch::cat(embeddings, 1);
    if (encoder) out.sequence = encoder->forward(out.sequence);
    out.global_rep = pool_net->forward(out.sequence.x, out.sequence.mask());
  }
  // salt appends un-pooled "global" inputs to the pooled vector when present.
  if (auto g = inputs.find("global"); g != inputs.end()) out.global_rep = torch::cat({out.global_rep, g->second}, -1);

  for (auto& task : tasks_) {
    TaskOutput result;
    if (task->input_name() == global_object_) {
      result = task->forward(out.global_rep, {}, {}, labels);
    } else {
      const Segment* seg = out.sequence.find(task->input_name());
      if (!seg)
        throw UsageError("task '" + task->name() + "': input '" + task->input_name() +
                         "' has no init net (constituent tasks need one)");
      result = task->forward(out.sequence.slice(task->input_name()), seg->mask, out.global_rep, labels);
    }
    out.preds[task->input_name()][task->name()] = result.preds;
    if (result.loss.defined()) out.losses[task->name()] = result.loss;
  }
  return out;
}

}  // namespace salt::models
