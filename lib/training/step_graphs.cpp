#include "training/step_graphs.h"

#include <spdlog/spdlog.h>

#include <map>
#include <sstream>

#if SALT_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "core/env_switch.h"
#include "models/salt_model.h"
#include "models/static_rows.h"
#include "models/host_twins.h"
#include "models/transformer.h"

namespace salt::training {

bool cuda_graphs_enabled() {
  static const bool on = env_switch("SALT_CUDA_GRAPHS", false, "eager steps", "CUDA graphs for the training steps");
  return on;
}

std::string cuda_graphs_refusal(const torch::Device& device, bool one_process, int64_t accumulate_grad_batches,
                                const models::SaltWrapperImpl& wrapper) {
  if (!device.is_cuda()) return "the run is not on a card";
  if (!one_process) return "several processes reduce gradients inside the step";
  if (accumulate_grad_batches != 1) return "accumulate_grad_batches is " + std::to_string(accumulate_grad_batches);
  const auto& model = *wrapper.model;
  if (model.mask_decoder) return "the mask decoder matches objects on the host";
  if (model.node_query_pool) return "NodeQueryGAP pooling";
  if (!model.merge_dict().empty()) return "merged inputs (merge_dict)";
  if (model.encoder && model.encoder->options().edge_embed_dim() > 0) return "edge features";
  return "";
}

std::vector<int64_t> bucket_capacities(const DeviceBatch& batch) {
  std::vector<int64_t> out;
  for (const auto& [name, mask] : batch.pad_masks) {
    auto host = batch.twins.of(mask);
    if (!host.defined()) host = mask.cpu();
    const auto counts = host.to(torch::kBool).logical_not().sum(1);
    const int64_t b = host.size(0), l = host.size(1);
    // What TokenIndex::from_mask and VertexingTask's edges ask static_capacity for.
    out.push_back(models::capacity_of(counts.sum().item<int64_t>(), b * l));
    out.push_back(models::capacity_of((counts * (counts - 1)).sum().item<int64_t>(), b * l * l));
  }
  return out;
}

std::string bucket_key(const DeviceBatch& batch) {
  std::ostringstream key;
  auto add = [&](const std::string& name, const torch::Tensor& t) { key << name << t.sizes() << t.scalar_type() << ";"; };
  for (const auto& [name, t] : batch.inputs) add("input " + name, t);
  for (const auto& [name, t] : batch.pad_masks) add("mask " + name, t);
  for (const auto& [input, labels] : batch.labels)
    for (const auto& [name, t] : labels) add("label " + input + "." + name, t);
  key << "capacities";
  for (const auto c : bucket_capacities(batch)) key << " " << c;
  return key.str();
}

bool labels_replayable(const models::SaltWrapperImpl& model, const DeviceBatch& batch) {
  HostTwinsScope twins(&batch.twins);
  for (const auto& task : model.model->task_list()) {
    const auto labels = batch.labels.find(task->input_name());
    if (labels == batch.labels.end()) continue;  // forward says what is missing
    const auto mask = batch.pad_masks.find(task->input_name());
    if (!task->labels_replayable(batch.labels, mask == batch.pad_masks.end() ? torch::Tensor() : mask->second))
      return false;
  }
  return true;
}

#if SALT_CUDA

namespace {

// Every tensor of a batch, in one order (inputs, masks, labels).
std::vector<torch::Tensor*> tensors_of(DeviceBatch& batch) {
  std::vector<torch::Tensor*> out;
  for (auto& [name, t] : batch.inputs) out.push_back(&t);
  for (auto& [name, t] : batch.pad_masks) out.push_back(&t);
  for (auto& [input, labels] : batch.labels)
    for (auto& [name, t] : labels) out.push_back(&t);
  return out;
}

// The loss and task losses of a replay, copied out of the graph's buffers: the
// fit sums them over steps while the next replay overwrites the buffers.
models::ModelOutput own_losses(const models::ModelOutput& graph_out) {
  models::ModelOutput out = graph_out;
  out.loss = graph_out.loss.detach().clone();
  for (auto& [task, loss] : out.losses) loss = loss.detach().clone();
  return out;
}

}  // namespace

struct StepGraphs::Impl {
  struct Bucket {
    int64_t seen = 0;
    std::vector<int64_t> capacities;        // what the eager step's static rows gave
    DeviceBatch inputs;                     // the graph's input tensors
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    models::ModelOutput out;                // the graph's outputs
  };

  Impl(const models::SaltWrapperImpl& m, const torch::Device& device, int64_t max)
      : model(m),
        parameters(m.parameters()),
        stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())),
        on_stream(stream),
        max_graphs(max) {}

  const models::SaltWrapperImpl& model;
  std::vector<torch::Tensor> parameters;
  // One gradient tensor per parameter for every graph (undefined: no gradient).
  // Captured backward passes add into them; each replay zeroes them first.
  std::vector<torch::Tensor> grads;
  c10::cuda::CUDAStream stream;
  c10::cuda::CUDAStreamGuard on_stream;
  c10::cuda::MempoolId_t pool = at::cuda::graph_pool_handle();  // shared: the graphs replay one at a time
  std::map<std::string, Bucket> buckets;
  int64_t max_graphs, graphs = 0, replays = 0;
  bool given_up = false;

  models::ModelOutput eager(Bucket& bucket, const DeviceBatch& batch, const StepGraphs::Step& step) {
    models::StaticRows on;
    auto out = step(batch);
    bucket.capacities = on.capacities();
    if (grads.empty())
      for (const auto& p : parameters) grads.push_back(p.grad());
    return out;
  }

  void install_grads() {
    for (std::size_t i = 0; i < parameters.size(); ++i)
      if (grads[i].defined()) parameters[i].mutable_grad() = grads[i];
  }

  void capture(Bucket& bucket, const DeviceBatch& batch, const StepGraphs::Step& step) {
    bucket.inputs = batch;  // the same tensors: this batch's memory becomes the graph's inputs
    for (auto* t : tensors_of(bucket.inputs)) *t = t->clone();
    // The model reads the host copies of the masks and labels while it is captured
    // (token counts, label checks): the capture batch's own.
    for (auto& [name, t] : bucket.inputs.pad_masks) bucket.inputs.twins.add(t, batch.twins.of(batch.pad_masks.at(name)));
    for (auto& [input, labels] : bucket.inputs.labels)
      for (auto& [name, t] : labels) bucket.inputs.twins.add(t, batch.twins.of(batch.labels.at(input).at(name)));
    install_grads();
    c10::cuda::device_synchronize();
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    models::StaticRows on;
    graph->capture_begin(pool);
    try {
      std::vector<torch::Tensor> defined;
      for (const auto& g : grads)
        if (g.defined()) defined.push_back(g);
      if (!defined.empty()) at::_foreach_zero_(defined);
      bucket.out = step(bucket.inputs);
    } catch (...) {
      try {
        graph->capture_end();
      } catch (...) {
      }
      throw;
    }
    graph->capture_end();
    if (on.capacities() != bucket.capacities)
      throw std::runtime_error("the captured step's static-rows capacities differ from its bucket's eager step");
    // Parameters the warm-up gave no gradient but the capture did: the graph's.
    for (std::size_t i = 0; i < parameters.size(); ++i)
      if (!grads[i].defined() && parameters[i].grad().defined()) grads[i] = parameters[i].grad();
    bucket.graph = std::move(graph);
    ++graphs;
  }

  // After a failed capture: eager from now on, with the gradients the failed
  // capture installed (and never zeroed) taken off the parameters.
  void give_up() {
    given_up = true;
    buckets.clear();
    for (std::size_t i = 0; i < grads.size(); ++i)
      if (grads[i].defined() && parameters[i].grad().is_same(grads[i])) parameters[i].mutable_grad() = torch::Tensor();
    grads.clear();
  }

  models::ModelOutput replay(Bucket& bucket, const DeviceBatch& batch) {
    auto to = tensors_of(bucket.inputs);
    auto from = tensors_of(const_cast<DeviceBatch&>(batch));
    for (std::size_t i = 0; i < to.size(); ++i) to[i]->copy_(*from[i], /*non_blocking=*/true);
    install_grads();
    bucket.graph->replay();
    ++replays;
    return own_losses(bucket.out);
  }
};

StepGraphs::StepGraphs(const models::SaltWrapperImpl& model, const torch::Device& device, int64_t max_graphs)
    : impl_(std::make_unique<Impl>(model, device, max_graphs)) {}

models::ModelOutput StepGraphs::run(const DeviceBatch& batch, const Step& step) {
  auto& d = *impl_;
  if (d.given_up || !labels_replayable(d.model, batch)) return step(batch);
  const auto key = bucket_key(batch);
  auto it = d.buckets.find(key);
  if (it == d.buckets.end()) {
    if (d.graphs >= d.max_graphs) return step(batch);  // enough buckets: the rare ones run eagerly
    it = d.buckets.emplace(key, Impl::Bucket{}).first;
  }
  auto& bucket = it->second;
  if (++bucket.seen == 1) return d.eager(bucket, batch, step);
  if (!bucket.graph) {
    try {
      d.capture(bucket, batch, step);
    } catch (const std::exception& e) {
      d.give_up();
      spdlog::warn("CUDA graphs off for the rest of the run: capturing a training step failed: {}", e.what());
      return step(batch);
    }
  }
  return d.replay(bucket, batch);
}

#else

struct StepGraphs::Impl {
  int64_t graphs = 0, replays = 0;
  bool given_up = false;
};

StepGraphs::StepGraphs(const models::SaltWrapperImpl&, const torch::Device&, int64_t) : impl_(std::make_unique<Impl>()) {}

models::ModelOutput StepGraphs::run(const DeviceBatch& batch, const Step& step) { return step(batch); }

#endif

StepGraphs::~StepGraphs() = default;
int64_t StepGraphs::graphs() const { return impl_->graphs; }
int64_t StepGraphs::replays() const { return impl_->replays; }
bool StepGraphs::given_up() const { return impl_->given_up; }

}  // namespace salt::training
