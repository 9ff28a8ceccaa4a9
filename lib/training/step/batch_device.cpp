#include "training/step/batch_device.h"

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#if SALT_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace salt::training {

namespace {

#if SALT_CUDA
// The device's copy stream, one for the whole run: the caching allocator hands a
// freed block out again only on the stream it was allocated on, so a new pool
// stream per batch (the pool cycles through 32) would keep ~32 batches' memory
// reserved.
c10::cuda::CUDAStream copy_stream_of(c10::DeviceIndex device) {
  static std::mutex mutex;
  static std::map<c10::DeviceIndex, c10::cuda::CUDAStream> streams;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = streams.find(device);
  if (it == streams.end())
    it = streams.emplace(device, at::cuda::getStreamFromPool(/*isHighPriority=*/false, device)).first;
  return it->second;
}

// One batch's copies on the device's copy stream. The copies' memory is
// allocated on that stream, so record_stream tells the caching allocator that the
// compute stream uses it too: freed, it is not handed out again before the compute
// stream's work on it is done.
class SideStreamCopy {
 public:
  explicit SideStreamCopy(const torch::Device& device)
      : compute_(at::cuda::getCurrentCUDAStream(device.index())),
        copy_(copy_stream_of(device.index() >= 0 ? device.index() : c10::cuda::current_device())),
        device_(device) {}

  torch::Tensor copy(const torch::Tensor& host) {
    c10::cuda::CUDAStreamGuard on_copy_stream(copy_);
    auto t = host.to(device_, /*non_blocking=*/true);
    copied_.push_back(t);
    return t;
  }

  // The compute stream's next kernels wait for every copy.
  void hand_over() {
    at::cuda::CUDAEvent done;
    done.record(copy_);
    done.block(compute_);
    for (auto& t : copied_) t.record_stream(compute_);
  }

 private:
  c10::cuda::CUDAStream compute_, copy_;
  torch::Device device_;
  std::vector<torch::Tensor> copied_;
};
#else
// Without CUDA no tensor is on a card: never made, here so that batch_to_device
// reads the same in both builds.
struct SideStreamCopy {
  explicit SideStreamCopy(const torch::Device&) {}
  torch::Tensor copy(const torch::Tensor& t) { return t; }
  void hand_over() {}
};
#endif

}  // namespace

TransferOptions transfer_from(const StepOptions& switches) {
  return TransferOptions().host_twins(switches.host_twins.value).copy_stream(switches.copy_stream.value);
}

DeviceBatch batch_to_device(Batch batch, const torch::Device& device, const TransferOptions& options) {
  DeviceBatch out;
  static_cast<Batch&>(out) = std::move(batch);
  // Only masks and labels get twins: the model never needs the inputs' values on the
  // host, and their (large, pinned) host copies are freed as soon as copied.
  const bool twins = options.host_twins();
  std::optional<SideStreamCopy> side;
  if (device.is_cuda() && options.copy_stream()) side.emplace(device);
  auto move = [&](torch::Tensor& t, bool twin) {
    auto host = t;
    if (side) t = side->copy(t);
    else if (!device.is_cpu()) t = t.to(device, /*non_blocking=*/true);
    if (twin && twins && host.device().is_cpu()) out.twins.add(t, std::move(host));
  };
  for (auto& [k, t] : out.inputs) move(t, false);
  for (auto& [k, t] : out.pad_masks) move(t, true);
  for (auto& [input, labels] : out.labels)
    for (auto& [k, t] : labels) move(t, true);
  if (side) side->hand_over();
  return out;
}

}  // namespace salt::training
