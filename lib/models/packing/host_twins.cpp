#include "models/packing/host_twins.h"

namespace salt {
namespace {
// The autograd engine runs backward on its own threads, but twins are asked for in
// the forward pass only, on the thread that installed them. A thread-local, not a
// switch: the host copies of the batch in the forward pass now (forward_batch
// installs them per batch), read deep in modules whose forward takes tensors alone
// (as salt's do). Whether a batch gets twins at all is StepOptions::host_twins
// (training/step/step_options.h), read once.
thread_local const HostTwins* current_twins = nullptr;
}  // namespace

void HostTwins::add(const torch::Tensor& on_device, torch::Tensor on_host) {
  TORCH_CHECK(on_host.device().is_cpu() && on_host.sizes() == on_device.sizes(), "HostTwins: not a host copy");
  twins_[on_device.unsafeGetTensorImpl()] = std::move(on_host);
}

torch::Tensor HostTwins::of(const torch::Tensor& t) const {
  if (!t.defined()) return {};
  auto it = twins_.find(t.unsafeGetTensorImpl());
  if (it == twins_.end() || it->second.sizes() != t.sizes()) return {};
  return it->second;
}

HostTwinsScope::HostTwinsScope(const HostTwins* twins) : previous_(current_twins) { current_twins = twins; }
HostTwinsScope::~HostTwinsScope() { current_twins = previous_; }

torch::Tensor host_twin(const torch::Tensor& t) { return current_twins ? current_twins->of(t) : torch::Tensor(); }

}  // namespace salt
