#include "models/packing/host_twins.h"

namespace salt {

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

torch::Tensor host_twin(const HostTwins* twins, const torch::Tensor& t) { return twins ? twins->of(t) : torch::Tensor(); }

}  // namespace salt
