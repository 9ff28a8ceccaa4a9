// Moving a batch (inputs, pad masks, labels) to the device the model runs on.
#pragma once
#include <torch/torch.h>

#include "data/batch.h"
#include "models/packing/host_twins.h"

namespace salt::training {

// A batch on the model's device, with the host tensors it was copied from: the
// model reads its masks' token counts and its labels' range there instead of
// waiting for the device (models/packing/host_twins.h; forward_batch installs them).
struct DeviceBatch : Batch {
  HostTwins twins;
};

// SALT_HOST_TWINS=0 turns the twins off (the model then reads the device, as before
// they existed): a switch for measuring what they change on a card (scripts/gpu_check.sh).
// On unless a fit sets it from its StepOptions (step_options.h) when it is built.
bool host_twins_enabled();
void set_host_twins(bool on);

// SALT_COPY_STREAM=0 copies on the compute stream, as before the copy stream: a
// switch for measuring what it changes on a card. Set like host_twins_enabled.
bool copy_stream_enabled();
void set_copy_stream(bool on);

// Non-blocking copies from pinned memory on a GPU, issued on a copy stream of the
// device's so that they run beside the kernels the compute stream still has queued
// (the previous step's); the compute stream waits for them before the batch's
// first kernel. On the CPU the tensors stay and are their own twins, so that the
// model takes the same path on both.
DeviceBatch batch_to_device(Batch batch, const torch::Device& device);

}  // namespace salt::training
