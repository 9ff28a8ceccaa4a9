// The host copies of a batch's device tensors. A batch is read on the CPU and then
// copied to the card; what the model needs to know about its masks and labels
// before launching kernels (how many valid tokens, the most in one jet, whether a
// label is out of range) can then be read from the copy left on the host instead
// of from the device, where each read makes the CPU wait for the GPU (host_read.h).
//
// The step that copies the batch records each pair (training/step/batch_device.h) and
// passes them to its forward pass in the ForwardContext (forward_context.h); the
// model asks host_twin() and reads the device, as before, for tensors it built
// itself (no twin) and where the context holds no twins.
#pragma once
#include <torch/torch.h>

#include <unordered_map>

namespace salt {

class HostTwins {
 public:
  // `on_host`: the CPU tensor `on_device` was copied from (same shape and values).
  void add(const torch::Tensor& on_device, torch::Tensor on_host);
  // The host copy of exactly this tensor (not a view or a copy of it), else undefined.
  torch::Tensor of(const torch::Tensor& t) const;
  bool empty() const { return twins_.empty(); }

 private:
  std::unordered_map<const c10::TensorImpl*, torch::Tensor> twins_;
};

// The host copy of t among `twins` (may be null: none), else undefined.
torch::Tensor host_twin(const HostTwins* twins, const torch::Tensor& t);

}  // namespace salt
