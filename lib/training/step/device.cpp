#include "training/step/device.h"

#include "core/errors.h"

namespace salt::training {

torch::Device select_device(const TrainerConfig& t, int local_rank) {
  const bool want_gpu = t.accelerator == "gpu" || t.accelerator == "cuda";
  const bool have_gpu = torch::cuda::is_available();
  if (t.accelerator == "cpu" || (t.accelerator == "auto" && !have_gpu)) return torch::Device(torch::kCPU);
  if (want_gpu && !have_gpu)
    throw UsageError("trainer.accelerator=" + t.accelerator +
                     " but no CUDA device is available to this LibTorch build; use --trainer.accelerator=cpu");
  int index = t.device_ids.empty() ? local_rank : t.device_ids.at(static_cast<std::size_t>(local_rank));
  if (index >= static_cast<int>(torch::cuda::device_count()))
    throw UsageError("trainer.devices asks for GPU " + std::to_string(index) + " but only " +
                     std::to_string(torch::cuda::device_count()) + " are visible (CUDA_VISIBLE_DEVICES?)");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace salt::training
