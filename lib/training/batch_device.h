// Moving a batch (inputs, pad masks, labels) to the device the model runs on.
#pragma once
#include <torch/torch.h>

#include <cstdlib>
#include <string>

#include "data/batch.h"
#include "models/host_twins.h"

namespace salt::training {

// A batch on the model's device, with the host tensors it was copied from: the
// model reads its masks' token counts and its labels' range there instead of
// waiting for the device (models/host_twins.h; forward_batch installs them).
struct DeviceBatch : Batch {
  HostTwins twins;
};

// SALT_HOST_TWINS=0 turns the twins off (the model then reads the device, as before
// they existed): a switch for measuring what they change on a card (scripts/gpu_check.sh).
inline bool host_twins_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("SALT_HOST_TWINS");
    return !v || std::string(v) != "0";
  }();
  return on;
}

// Non-blocking copies from pinned memory on a GPU; on the CPU the tensors stay and
// are their own twins, so that the model takes the same path on both.
inline DeviceBatch batch_to_device(Batch batch, const torch::Device& device) {
  DeviceBatch out;
  static_cast<Batch&>(out) = std::move(batch);
  // Only masks and labels get twins: the model never needs the inputs' values on the
  // host, and their (large, pinned) host copies are freed as soon as copied.
  const bool twins = host_twins_enabled();
  auto move = [&](torch::Tensor& t, bool twin) {
    auto host = t;
    if (!device.is_cpu()) t = t.to(device, /*non_blocking=*/true);
    if (twin && twins && host.device().is_cpu()) out.twins.add(t, std::move(host));
  };
  for (auto& [k, t] : out.inputs) move(t, false);
  for (auto& [k, t] : out.pad_masks) move(t, true);
  for (auto& [input, labels] : out.labels)
    for (auto& [k, t] : labels) move(t, true);
  return out;
}

}  // namespace salt::training
