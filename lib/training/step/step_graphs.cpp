#include "training/step/step_graphs.h"

#include <spdlog/spdlog.h>

#include <map>
#include <sstream>

#if SALT_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "models/layers/transformer.h"
#include "models/packing/static_rows.h"
#include "models/salt_model.h"

namespace salt::training {

std::string cuda_graphs_refusal(const torch::Device& device, bool one_process, int64_t accumulate_grad_batches,
                                const models::SaltWrapperImpl& wrapper) {
  if (!device.is_cuda()) return "the run is not on a card";
  if (!one_process) return "several processes reduce gradients inside the step";
  if (accumulate_grad_batches != 1) return "accumulate_grad_batches is " + std::to_string(accumulate_grad_batches);
  const auto& model = *wrapper.model;
  if (model.mask_decoder) return "the mask decoder matches objects on the host";
  if (!model.merge_dict().empty()) return "merged inputs (merge_dict)";
  if (model.encoder && model.encoder->options().edge_embed_dim() > 0) return "edge features";
  return "";
}

std::string decide_graphs(const GraphsChoice& choice, const torch::Device& device, bool one_process,
                          int64_t accumulate_grad_batches, const models::SaltWrapperImpl& model) {
  if (!choice.wanted) return "SALT_CUDA_GRAPHS=0";
  auto refusal = cuda_graphs_refusal(device, one_process, accumulate_grad_batches, model);
  if (refusal.empty() && choice.deterministic && !choice.asked)
    refusal = "trainer.deterministic (graphed fits are not yet shown bitwise repeatable on a card; SALT_CUDA_GRAPHS=1 "
              "uses them)";
  return refusal;
}

std::vector<int64_t> bucket_capacities(const DeviceBatch& batch) {
  std::vector<int64_t> out;
  for (const auto& [name, mask] : batch.pad_masks) {
    auto host = batch.twins.of(mask);
    if (!host.defined()) host = mask.cpu();
    const auto counts = host.to(torch::kBool).logical_not().sum(1);
    const int64_t b = host.size(0), l = host.size(1);
    // What TokenIndex::from_mask and VertexingTask's edges take. (A model without a
    // vertexing task takes no edges: its buckets split by an unused figure, rarely.)
    out.push_back(models::row_capacity(counts.sum().item<int64_t>(), b, l));
    out.push_back(models::edge_capacity((counts * (counts - 1)).sum().item<int64_t>(), b, l));
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
  for (const auto& task : model.model->task_list()) {
    const auto labels = batch.labels.find(task->input_name());
    if (labels == batch.labels.end()) continue;  // forward says what is missing
    const auto mask = batch.pad_masks.find(task->input_name());
    if (!task->labels_replayable(batch.labels, mask == batch.pad_masks.end() ? torch::Tensor() : mask->second,
                                 batch.twins))
      return false;
  }
  return true;
}

#if SALT_CUDA

namespace {

// Every tensor of a batch (DeviceBatch or const DeviceBatch), in one order:
// inputs, masks, labels.
template <class B>
auto tensors_of(B& batch) {
  std::vector<decltype(&batch.inputs.begin()->second)> out;
  for (auto& [name, t] : batch.inputs) out.push_back(&t);
  for (auto& [name, t] : batch.pad_masks) out.push_back(&t);
  for (auto& [input, labels] : batch.labels)
    for (auto& [name, t] : labels) out.push_back(&t);
  return out;
}

// The graph's input tensors: copies of `batch` in memory of their own, with the
// batch's host copies of masks and labels as their twins (the model reads them
// while it is captured: token counts, label checks).
DeviceBatch graph_inputs(const DeviceBatch& batch) {
  DeviceBatch inputs;
  static_cast<Batch&>(inputs) = batch;
  for (auto* t : tensors_of(inputs)) *t = t->clone();
  for (auto& [name, t] : inputs.pad_masks) inputs.twins.add(t, batch.twins.of(batch.pad_masks.at(name)));
  for (auto& [input, labels] : inputs.labels)
    for (auto& [name, t] : labels) inputs.twins.add(t, batch.twins.of(batch.labels.at(input).at(name)));
  return inputs;
}

// A device sync throws while it lives (torch.cuda.set_sync_debug_mode("error")):
// a step that waits for the card (an item(), a nonzero) cannot be captured, and
// its eager warm-up says so before any capture begins.
class SyncsThrow {
 public:
  SyncsThrow() : previous_(c10::cuda::warning_state().get_sync_debug_mode()) {
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
  }
  ~SyncsThrow() { c10::cuda::warning_state().set_sync_debug_mode(previous_); }
  SyncsThrow(const SyncsThrow&) = delete;
  SyncsThrow& operator=(const SyncsThrow&) = delete;

 private:
  c10::cuda::SyncDebugMode previous_;
};

bool is_sync_error(const c10::Error& e) { return std::string(e.what()).find("synchronizing") != std::string::npos; }

}  // namespace

struct StepGraphs::Impl {
  struct Bucket {
    int64_t seen = 0;
    std::vector<int64_t> capacities;  // what the eager step's static rows gave
    std::vector<bool> has_grad;       // per parameter: whether the eager step gave it a gradient
    DeviceBatch inputs;               // the graph's input tensors
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    torch::Tensor loss;               // the graph's outputs the fit reads
    std::map<std::string, torch::Tensor> losses;
  };

  Impl(const models::SaltWrapperImpl& m, const torch::Device& device, int64_t max)
      : model(m),
        parameters(m.parameters()),
        before(c10::cuda::getCurrentCUDAStream(device.index())),
        stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())),
        on_stream(stream),
        max_graphs(max) {
    hand_over(before, stream);  // what was queued before goes first
  }
  ~Impl() { hand_over(stream, before); }

  // `to`'s next work waits for what `from` has queued (pool streams do not wait
  // for the default stream by themselves).
  static void hand_over(const c10::cuda::CUDAStream& from, const c10::cuda::CUDAStream& to) {
    at::cuda::CUDAEvent done;
    done.record(from);
    done.block(to);
  }

  const models::SaltWrapperImpl& model;
  std::vector<torch::Tensor> parameters;
  // One gradient tensor per parameter for every graph, made before the first
  // capture (outside the graphs' pool): captured backward passes add into them,
  // and each graph zeroes them all first.
  std::vector<torch::Tensor> grads;
  c10::cuda::CUDAStream before, stream;  // the thread's stream before, and the graphs'
  c10::cuda::CUDAStreamGuard on_stream;
  c10::cuda::MempoolId_t pool = at::cuda::graph_pool_handle();  // shared: the graphs replay one at a time
  std::map<std::string, Bucket> buckets;
  int64_t max_graphs, graphs = 0, replays = 0;
  bool given_up = false;

  // The bucket's first batch: eager, under static rows, with device syncs refused.
  // A step that syncs is run again as it is and the graphs are given up (nothing
  // was captured yet, so nothing is left half-done).
  models::ModelOutput warm_up(Bucket& bucket, const DeviceBatch& batch, const StepGraphs::Step& step) {
    try {
      models::StaticRows on;
      SyncsThrow no_syncs;
      auto out = step(batch, &on);
      bucket.capacities = on.capacities();
      for (const auto& p : parameters) bucket.has_grad.push_back(p.grad().defined());
      return out;
    } catch (const c10::Error& e) {
      if (!is_sync_error(e)) throw;
      given_up = true;
      buckets.clear();
      for (auto& p : parameters) p.mutable_grad() = torch::Tensor();  // the partial step's
      spdlog::warn("CUDA graphs off: the training step waits for the card, which a graph cannot: {}",
                   e.what_without_backtrace());
      return step(batch, nullptr);
    }
  }

  void install_grads(const std::vector<bool>& has_grad) {
    for (std::size_t i = 0; i < parameters.size(); ++i)
      parameters[i].mutable_grad() = has_grad[i] ? grads[i] : torch::Tensor();
  }

  void capture(Bucket& bucket, const DeviceBatch& batch, const StepGraphs::Step& step) {
    if (grads.empty())
      for (const auto& p : parameters) grads.push_back(torch::zeros_like(p));
    bucket.inputs = graph_inputs(batch);
    install_grads(std::vector<bool>(parameters.size(), true));  // captured as in-place sums
    c10::cuda::device_synchronize();
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    models::StaticRows on;
    // Thread-local: the loader's threads pin host memory meanwhile, which a global
    // capture would count against it (torch's default suits DataLoader processes).
    graph->capture_begin(pool, cudaStreamCaptureModeThreadLocal);
    try {
      at::_foreach_zero_(grads);
      const auto out = step(bucket.inputs, &on);
      bucket.loss = out.loss;
      bucket.losses = out.losses;
      graph->capture_end();
    } catch (const std::exception& e) {
      // End the stream's capture (its own error is the one above), so that this
      // thread's later work is not captured; torch still leaves its allocator and
      // generators capturing: no going on eagerly.
      try {
        graph->capture_end();
      } catch (...) {
      }
      throw std::runtime_error(std::string("CUDA graphs: capturing a training step failed (SALT_CUDA_GRAPHS=0 runs ") +
                               "the steps eagerly): " + e.what());
    }
    if (on.capacities() != bucket.capacities)
      throw std::logic_error("CUDA graphs: a bucket's batches gave different static-rows capacities (bucket_key "
                             "does not decide them)");
    bucket.graph = std::move(graph);
    ++graphs;
  }

  models::ModelOutput replay(Bucket& bucket, const DeviceBatch& batch) {
    auto to = tensors_of(bucket.inputs);
    auto from = tensors_of(batch);
    for (std::size_t i = 0; i < to.size(); ++i) to[i]->copy_(*from[i], /*non_blocking=*/true);
    bucket.graph->replay();
    install_grads(bucket.has_grad);
    ++replays;
    // Copies: the fit sums the losses over steps while the next replay overwrites them.
    models::ModelOutput out;
    out.loss = bucket.loss.detach().clone();
    for (const auto& [task, loss] : bucket.losses) out.losses[task] = loss.detach().clone();
    return out;
  }
};

StepGraphs::StepGraphs(const models::SaltWrapperImpl& model, const torch::Device& device, int64_t max_graphs)
    : impl_(std::make_unique<Impl>(model, device, max_graphs)) {}

models::ModelOutput StepGraphs::run(const DeviceBatch& batch, const Step& step) {
  auto& d = *impl_;
  if (d.given_up || !labels_replayable(d.model, batch)) return step(batch, nullptr);
  const auto key = bucket_key(batch);
  auto it = d.buckets.find(key);
  if (it == d.buckets.end()) {
    if (static_cast<int64_t>(d.buckets.size()) >= d.max_graphs) return step(batch, nullptr);  // the rare ones run eagerly
    it = d.buckets.emplace(key, Impl::Bucket{}).first;
  }
  auto& bucket = it->second;
  if (++bucket.seen == 1) return d.warm_up(bucket, batch, step);
  if (!bucket.graph) d.capture(bucket, batch, step);
  return d.replay(bucket, batch);
}
#else

struct StepGraphs::Impl {
  int64_t graphs = 0, replays = 0;
  bool given_up = false;
};

StepGraphs::StepGraphs(const models::SaltWrapperImpl&, const torch::Device&, int64_t) : impl_(std::make_unique<Impl>()) {}

models::ModelOutput StepGraphs::run(const DeviceBatch& batch, const Step& step) { return step(batch, nullptr); }

#endif

StepGraphs::~StepGraphs() = default;
int64_t StepGraphs::graphs() const { return impl_->graphs; }
int64_t StepGraphs::replays() const { return impl_->replays; }
bool StepGraphs::given_up() const { return impl_->given_up; }

}  // namespace salt::training
