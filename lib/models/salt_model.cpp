#include "models/salt_model.h"

#include <set>

#include "config/edge_config.h"
#include "core/errors.h"
#include "models/tasks/regression_task.h"

namespace salt::models {

SaltModelImpl::SaltModelImpl(std::string global_object, std::vector<InitNet> init_net_list, Transformer encoder_in,
                             PoolNet pool_in, std::vector<std::shared_ptr<TaskImpl>> task_list,
                             Featurewise featurewise_in, MaskDecoder decoder_in, InitNet edge_in)
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
  if (pool_in && pool_in->needs_queries() && !decoder_in)
    throw UsageError("SaltModel: " + pool_in->name() + " pooling needs a mask_decoder");
  if (!pool_in) {
    if (encoder_in) throw UsageError("SaltModel: pool_net must be set if encoder is set");
    if (init_nets_.size() != 1) throw UsageError("SaltModel: pool_net must be set if more than one init_net is set");
    if (init_nets_.front()->input_name() != global_object_)
      throw UsageError("SaltModel: without pool_net the only init_net must embed the global object '" + global_object_ +
                       "', not '" + init_nets_.front()->input_name() + "'");
  }

  if (edge_in) check_edge_init_net(edge_in, encoder_in);

  // Registration order follows salt's attribute order (featurewise_global, init_nets,
  // edge_init_nets, tasks, encoder, mask_decoder, pool_net): the parameters' order,
  // which salt's optimizer states are indexed by.
  if (featurewise_in) featurewise_global = register_module("featurewise_global", featurewise_in);
  init_nets = register_module("init_nets", torch::nn::ModuleList());
  for (auto& n : init_nets_) init_nets->push_back(n);
  if (edge_in) {
    edge_init_net_ = edge_in;
    edge_init_nets = register_module("edge_init_nets", torch::nn::ModuleList());
    edge_init_nets->push_back(edge_in);
  }
  tasks = register_module("tasks", torch::nn::ModuleList());
  for (auto& t : tasks_) tasks->push_back(t);
  if (encoder_in) encoder = register_module("encoder", encoder_in);
  if (decoder_in) {
    mask_decoder = register_module("mask_decoder", decoder_in);
    for (const auto& t : tasks_)
      if (t->input_name() == "objects") {
        if (!std::dynamic_pointer_cast<RegressionTaskImpl>(t) || t->torch::nn::Module::name() != "RegressionTask")
          throw UsageError("task '" + t->name() + "': only RegressionTask runs on the mask decoder's objects");
        object_tasks_.push_back(t);
      }
  }
  if (pool_in) pool_net = register_module("pool_net", pool_in);
}

void SaltModelImpl::check_edge_init_net(const InitNet& net, const Transformer& encoder_in) {
  const std::string prefix = config::edge_input_name("");
  if (net->input_name().rfind(prefix, 0) != 0)
    throw UsageError("SaltModel: an edge init net reads '" + prefix + "<input>', not '" + net->input_name() + "'");
  if (!encoder_in || encoder_in->options().edge_embed_dim() != net->output_size())
    throw UsageError("SaltModel: the edge init net's output_size " + std::to_string(net->output_size()) +
                     " must equal the encoder's edge_embed_dim " +
                     std::to_string(encoder_in ? encoder_in->options().edge_embed_dim() : 0));
  edge_input_ = net->input_name().substr(prefix.size());
}

void SaltModelImpl::set_merge_dict(std::vector<std::pair<std::string, std::vector<std::string>>> merges) {
  merges_ = std::move(merges);
}

namespace {

using Merges = std::vector<std::pair<std::string, std::vector<std::string>>>;

// The packed sequence with each merge's members replaced by one segment (appended
// after the others, as salt's dict puts the merged stream last): padded member
// embeddings concatenated along the sequence, then packed again.
PackedSequence merge_segments(const PackedSequence& in, const Merges& merges, const ForwardContext& context) {
  if (merges.empty()) return in;
  PackedSequence out;
  out.kernels = in.kernels;
  std::set<std::string> merged;
  for (const auto& [_, members] : merges) merged.insert(members.begin(), members.end());
  for (size_t s = 0; s < in.segments.size(); ++s)
    if (!merged.count(in.segments[s].name))
      out.append(in.segments[s].name, in.segments[s].mask, in.index[s], in.rows(static_cast<int64_t>(s)));
  for (const auto& [name, members] : merges) {
    std::vector<torch::Tensor> masks, padded;
    for (const auto& m : members) {
      const int64_t s = in.find(m);
      masks.push_back(in.segments[static_cast<size_t>(s)].mask);
      padded.push_back(in.index[static_cast<size_t>(s)].scatter(in.rows(s)));
    }
    const auto mask = torch::cat(masks, 1);
    const auto idx = TokenIndex::from_mask(mask, context);
    out.append(name, mask, idx, idx.gather(torch::cat(padded, 1)));
  }
  return out;
}

}  // namespace

Labels SaltModelImpl::merged_labels(const Labels& labels) const {
  const Merges& merges = merges_;
  Labels out = labels;
  for (const auto& [name, members] : merges) {
    auto first = labels.find(members.front());
    if (first == labels.end()) continue;
    for (const auto& [var, _] : first->second) {
      std::vector<torch::Tensor> parts;
      for (const auto& m : members) {
        auto in = labels.find(m);
        if (in == labels.end() || !in->second.count(var))
          throw InputError("merge_dict." + name + ": label '" + var + "' is missing for '" + m + "'");
        parts.push_back(in->second.at(var));
      }
      out[name][var] = torch::cat(parts, 1);
    }
  }
  return out;
}

SaltModelOutput SaltModelImpl::forward(const TensorMap& inputs, const TensorMap& pad_masks, const Labels* labels,
                                      const ForwardContext& context) {
  SaltModelOutput out;
  // Constituents travel packed (valid tokens only) from the init nets to the task
  // heads; attention and pooling use a compact padded layout (TokenLayout) and
  // out.sequence is the padded view for callers (zeros at padded slots).
  PackedSequence packed;
  packed.kernels = context.kernels;
  if (!pool_net) {
    out.global_rep = init_nets_.front()->forward(inputs);
  } else {
    for (auto& net : init_nets_) {
      auto it = inputs.find(net->input_name());
      if (it == inputs.end()) throw InputError("InitNet: input '" + net->input_name() + "' missing from the batch");
      const auto& x = it->second;
      if (x.dim() != 3)
        throw InputError("SaltModel: input '" + net->input_name() + "' is not a constituent input (shape [B, L, F])");
      auto m = pad_masks.find(net->input_name());
      auto mask = m != pad_masks.end() ? m->second.to(torch::kBool)
                                       : torch::zeros({x.size(0), x.size(1)}, torch::dtype(torch::kBool).device(x.device()));
      auto idx = TokenIndex::from_mask(mask, context);
      packed.append(net->input_name(), mask, idx, net->forward_packed(inputs, idx));
    }
    auto p = inputs.find("parameters");
    const auto params = p == inputs.end() ? torch::Tensor() : p->second;
    if ((featurewise_global || (encoder && encoder->featurewise)) && !params.defined())
      throw InputError("SaltModel: featurewise nets need the 'parameters' inputs (data.variables.parameters)");
    packed = merge_segments(packed, merges_, context);
    torch::Tensor edges;
    if (edge_init_net_) edges = edge_init_net_->forward(inputs);
    if (encoder) packed = encoder->forward_packed(packed, params, edges, edge_input_);
    if (mask_decoder) {
      const int64_t s = packed.find(mask_decoder->options().constituent_name);
      const auto& seg = packed.segments[static_cast<size_t>(s)];
      const auto x = packed.index[static_cast<size_t>(s)].scatter(packed.rows(s));
      out.objects = mask_decoder->forward(x, seg.mask, object_tasks_, labels, pad_masks, labels ? &out.losses : nullptr);
    }
    if (featurewise_global) packed.x = featurewise_global->forward(params.index_select(0, packed.jet()), packed.x);
    out.sequence = packed.unpack();
    out.global_rep = pool_net->pool({packed, out.sequence, out.objects.objects.embed});
  }
  // salt appends un-pooled "global" inputs to the pooled vector when present.
  if (auto g = inputs.find("global"); g != inputs.end()) out.global_rep = torch::cat({out.global_rep, g->second}, -1);

  Labels merged;
  if (labels && !merges_.empty()) {
    merged = merged_labels(*labels);
    labels = &merged;
  }
  for (auto& task : tasks_) {
    if (mask_decoder && task->input_name() == "objects") {  // run (and matched) by the decoder
      out.preds["objects"][task->name()] = out.objects.objects.tasks.at(task->name());
      continue;
    }
    TaskOutput result;
    if (task->input_name() == global_object_) {
      result = task->forward(out.global_rep, {}, {}, labels, context);
    } else {
      const int64_t s = packed.find(task->input_name());
      if (s < 0)
        throw UsageError("task '" + task->name() + "': input '" + task->input_name() +
                         "' has no init net (constituent tasks need one)");
      result =
          task->forward_packed(packed.rows(s), packed.index[s], packed.segments[s].mask, out.global_rep, labels, context);
    }
    out.preds[task->input_name()][task->name()] = result.preds;
    if (result.loss.defined()) out.losses[task->name()] = result.loss;
  }
  return out;
}

}  // namespace salt::models
