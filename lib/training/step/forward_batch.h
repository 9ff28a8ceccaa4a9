// A loader's batch through the model, at the trainer's precision: the one call the
// fit, validation and test loops share (models/ knows nothing of the loader's Batch).
#pragma once
#include <optional>

#include "config/trainer_config.h"
#include "core/torch_compat.h"
#include "data/batch.h"
#include "models/kernels/cpu_bf16.h"
#include "models/packing/forward_context.h"
#include "models/salt_wrapper.h"
#include "training/step/batch_device.h"

namespace salt::training {

// Mixed precision of the forward pass: none, or autocast to this dtype.
struct Autocast {
  bool enabled = false;
  torch::ScalarType dtype = torch::kBFloat16;
};

// trainer.precision on `device`, for every stage alike (fit, validate, test), as
// Lightning's precision plugin wraps training, validation and test steps: float32
// runs plain; 16-mixed is float16 on CUDA and bfloat16 on the CPU (as in salt);
// bf16-mixed is bfloat16.
inline Autocast autocast_for(config::Precision precision, const torch::Device& device) {
  Autocast a;
  a.enabled = precision != config::Precision::kFloat32;
  a.dtype = device.is_cuda() && precision == config::Precision::kFloat16Mixed ? torch::kFloat16 : torch::kBFloat16;
  return a;
}

// Whether steps under `autocast` on `device` multiply in bf16 on the CPU (where
// StepOptions' cpu_bf16 switches apply).
inline bool cpu_bf16_steps(const Autocast& autocast, const torch::Device& device) {
  return autocast.enabled && autocast.dtype == torch::kBFloat16 && device.is_cpu();
}

// Uses batch.labels when with_labels and the batch has any; the forward pass runs
// under `autocast` (on the batch's device), with `context` (static rows, the
// kernels' choices: models/packing/forward_context.h).
inline models::ModelOutput forward_batch(models::SaltWrapperImpl& model, const Batch& batch, bool with_labels,
                                         const Autocast& autocast, const torch::Device& device,
                                         const models::ForwardContext& context = {}) {
  std::optional<compat::AutocastGuard> guard;
  if (autocast.enabled) {
    if (device.is_cpu() && autocast.dtype == torch::kBFloat16) models::use_cpu_bf16_matmul();
    guard.emplace(device.type(), autocast.dtype);
  }
  const bool use = with_labels && !batch.labels.empty();
  return model.forward(batch.inputs, batch.pad_masks, use ? &batch.labels : nullptr, context);
}

// The same for a batch copied to the device: the model reads the host copies of
// its masks and labels where it needs their values (no wait for the device): the
// context's twins are the batch's.
inline models::ModelOutput forward_batch(models::SaltWrapperImpl& model, const DeviceBatch& batch, bool with_labels,
                                         const Autocast& autocast, const torch::Device& device,
                                         models::ForwardContext context = {}) {
  context.twins = &batch.twins;
  return forward_batch(model, static_cast<const Batch&>(batch), with_labels, autocast, device, context);
}

}  // namespace salt::training
