#include "parallel/grad_sync.h"

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

#include "core/env_switch.h"
#include "core/errors.h"
#include "parallel/process_group.h"

namespace salt::parallel {

struct GradSync::State {
  struct Bucket {
    std::vector<std::size_t> members;  // parameter indices
    torch::Tensor flat;
    std::size_t ready = 0;
    PendingReduce pending;
  };
  struct Slot {
    std::size_t bucket = 0;
    int64_t offset = 0;
    bool seen = false;  // this step's gradient is in the bucket
  };

  ProcessGroup* group = nullptr;
  GradSyncOptions options;
  std::vector<torch::Tensor> params;
  std::vector<Slot> slots;
  std::vector<Bucket> buckets;
  std::vector<unsigned> hook_handles;
  std::size_t next_launch = 0;  // buckets before this one are in flight
  bool active = false;          // hooks copy gradients (a synchronised backward)
  bool in_backward = false;
  std::mutex mutex;  // autograd may call hooks from its device threads
  Stats* stats = nullptr;

  torch::Tensor slot_view(std::size_t i) {
    const auto& s = slots[i];
    return buckets[s.bucket].flat.narrow(0, s.offset, params[i].numel());
  }

  // Called with the lock held: starts, in order, every bucket whose gradients are all in.
  void launch_ready() {
    while (next_launch < buckets.size() && buckets[next_launch].ready == buckets[next_launch].members.size()) {
      auto& b = buckets[next_launch++];
      b.pending = group->allreduce_sum_async(b.flat);
      if (in_backward) ++stats->buckets_launched_in_backward;
      else ++stats->buckets_launched_after;
    }
  }

  // The gradient this step reduces: what .grad holds already (earlier micro-batches)
  // plus `incoming` (this backward's, not yet accumulated when the hook runs).
  void take(std::size_t i, const torch::Tensor& incoming) {
    auto& s = slots[i];
    if (s.seen) return;  // a leaf's hook runs once per backward
    torch::NoGradGuard no_grad;
    auto dst = slot_view(i);
    const auto& prev = params[i].grad();
    if (incoming.defined() && prev.defined()) dst.copy_((prev + incoming).reshape(-1));
    else if (incoming.defined()) dst.copy_(incoming.reshape(-1));
    else if (prev.defined()) dst.copy_(prev.reshape(-1));
    else dst.zero_();
    s.seen = true;
    ++buckets[s.bucket].ready;
  }

  void on_grad(std::size_t i, const torch::Tensor& grad) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!active) return;
    take(i, grad);
    launch_ready();
  }
};

// On/off and number switches follow the rule of every SALT_* switch (core/env_switch.h):
// a value outside it is refused, never read as one or the other.
GradSyncOptions GradSyncOptions::from_environment(const EnvLookup& env) {
  GradSyncOptions o;
  if (auto v = env_text(env, "SALT_DIST_OVERLAP"))
    o.set_overlap(env_switch("SALT_DIST_OVERLAP", v->c_str(), true, "all-reduce after backward",
                             "all-reduce buckets from gradient hooks, during backward"));
  const auto bucket = env_text(env, "SALT_DIST_BUCKET_MB");  // 1 KiB to 1 TiB
  if (const auto mb = env_number("SALT_DIST_BUCKET_MB", bucket ? bucket->c_str() : nullptr, 0.001, 1 << 20,
                                 "a bucket size in MiB"))
    o.set_bucket_bytes(static_cast<int64_t>(*mb * (1 << 20)));
  return o;
}

void check_data_parallel_switches(const EnvLookup& env) {
  (void)dist_timeout(env);
  (void)GradSyncOptions::from_environment(env);
}

GradSync::GradSync(ProcessGroup& group, std::vector<torch::Tensor> parameters, GradSyncOptions options)
    : state_(std::make_unique<State>()) {
  auto& st = *state_;
  st.group = &group;
  st.options = options;
  st.stats = &stats_;
  for (auto& p : parameters)
    if (p.requires_grad()) st.params.push_back(p);
  st.slots.resize(st.params.size());

  // Reverse order; one open bucket per (dtype, device), closed when it would exceed the size.
  std::map<std::string, std::size_t> open;
  std::vector<int64_t> fill;
  for (std::size_t k = st.params.size(); k-- > 0;) {
    const auto& p = st.params[k];
    const std::string key = std::string(c10::toString(p.scalar_type())) + "@" + p.device().str();
    const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    auto it = open.find(key);
    if (it == open.end() || (fill[it->second] > 0 && (fill[it->second] + bytes) > options.bucket_bytes)) {
      st.buckets.emplace_back();
      fill.push_back(0);
      it = open.insert_or_assign(key, st.buckets.size() - 1).first;
    }
    auto& b = st.buckets[it->second];
    st.slots[k].bucket = it->second;
    st.slots[k].offset = fill[it->second] / static_cast<int64_t>(p.element_size());
    b.members.push_back(k);
    fill[it->second] += bytes;
  }
  for (std::size_t b = 0; b < st.buckets.size(); ++b) {
    const auto& first = st.params[st.buckets[b].members.front()];
    st.buckets[b].flat = torch::zeros({fill[b] / static_cast<int64_t>(first.element_size())}, first.options());
  }
  if (options.overlap) {
    State* raw = state_.get();
    for (std::size_t i = 0; i < st.params.size(); ++i)
      st.hook_handles.push_back(st.params[i].register_hook([raw, i](const torch::Tensor& grad) { raw->on_grad(i, grad); }));
  }
}

GradSync::~GradSync() {
  for (std::size_t i = 0; i < state_->hook_handles.size(); ++i) state_->params[i].remove_hook(state_->hook_handles[i]);
}

std::size_t GradSync::num_buckets() const { return state_->buckets.size(); }

void GradSync::begin_backward(bool sync) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->active = sync && state_->options.overlap;
  state_->in_backward = true;
}

void GradSync::finish() {
  auto& st = *state_;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    st.active = false;
    st.in_backward = false;
    // Gradients no hook delivered (overlap off, or parameters unused this step).
    for (std::size_t i = 0; i < st.params.size(); ++i)
      if (!st.slots[i].seen) st.take(i, torch::Tensor());
    st.launch_ready();
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& b : st.buckets) b.pending.wait();
  stats_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  torch::NoGradGuard no_grad;
  const double world = static_cast<double>(st.group->size());
  for (auto& b : st.buckets) {
    b.flat.div_(world);
    for (auto i : b.members) {
      auto mean = st.slot_view(i).view_as(st.params[i]);
      auto& grad = st.params[i].mutable_grad();
      if (grad.defined()) grad.copy_(mean);
      else if (mean.abs().sum().item<double>() != 0) grad = mean.clone();  // no rank had one: stay undefined
      st.slots[i].seen = false;
    }
    b.ready = 0;
  }
  st.next_launch = 0;
  ++stats_.steps;
}

void broadcast_module(ProcessGroup& group, torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  std::map<std::string, std::vector<torch::Tensor>> by_kind;
  for (auto& p : module.parameters()) by_kind[std::string(c10::toString(p.scalar_type())) + p.device().str()].push_back(p);
  for (auto& b : module.buffers()) by_kind[std::string(c10::toString(b.scalar_type())) + b.device().str()].push_back(b);
  for (auto& [kind, tensors] : by_kind) {
    std::vector<torch::Tensor> flats;
    for (auto& t : tensors) flats.push_back(t.reshape(-1));
    auto flat = torch::cat(flats);
    if (flat.scalar_type() == torch::kBool) flat = flat.to(torch::kUInt8);  // Gloo has no bool
    group.broadcast(flat, 0);
    int64_t offset = 0;
    for (auto& t : tensors) {
      t.copy_(flat.narrow(0, offset, t.numel()).view_as(t));
      offset += t.numel();
    }
  }
}

}  // namespace salt::parallel
