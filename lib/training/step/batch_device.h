// Moving a batch (inputs, pad masks, labels) to the device the model runs on.
#pragma once
#include <torch/torch.h>

#include "data/batch.h"
#include "models/packing/host_twins.h"
#include "training/step/step_options.h"

namespace salt::training {

// A batch on the model's device, with the host tensors it was copied from: the
// model reads its masks' token counts and its labels' range there instead of
// waiting for the device (models/packing/host_twins.h; forward_batch passes them to the
// forward pass in its models::ForwardContext).
struct DeviceBatch : Batch {
  HostTwins twins;
};

// How a batch crosses to the device. `salt fit` passes its StepOptions' values
// (step_options.h: SALT_HOST_TWINS, SALT_COPY_STREAM) through its TrainStep and
// validation; everything else takes these defaults.
struct TransferOptions {
  // The masks' and labels' host copies kept beside the device tensors; off, the model
  // reads the device, as before they existed (a switch for measuring on a card).
  TORCH_ARG(bool, host_twins) = true;
  // Copies on the device's copy stream; off, on the compute stream, as before it.
  TORCH_ARG(bool, copy_stream) = true;
};

// Non-blocking copies from pinned memory on a GPU, issued on a copy stream of the
// device's so that they run beside the kernels the compute stream still has queued
// (the previous step's); the compute stream waits for them before the batch's
// first kernel. On the CPU the tensors stay and are their own twins, so that the
// model takes the same path on both.
DeviceBatch batch_to_device(Batch batch, const torch::Device& device, const TransferOptions& options = {});

// The transfer a run's switches ask for (SALT_HOST_TWINS, SALT_COPY_STREAM).
TransferOptions transfer_from(const StepOptions& switches);

}  // namespace salt::training
