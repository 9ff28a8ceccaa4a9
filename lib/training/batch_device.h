// Moving a batch (inputs, pad masks, labels) to the device the model runs on.
#pragma once
#include <torch/torch.h>

#include "data/batch.h"

namespace salt::training {

// A no-op on the CPU; non-blocking copies from pinned memory on a GPU.
inline Batch batch_to_device(Batch batch, const torch::Device& device) {
  if (device.is_cpu()) return batch;
  for (auto& [k, t] : batch.inputs) t = t.to(device, /*non_blocking=*/true);
  for (auto& [k, t] : batch.pad_masks) t = t.to(device, true);
  for (auto& [input, labels] : batch.labels)
    for (auto& [k, t] : labels) t = t.to(device, true);
  return batch;
}

}  // namespace salt::training
