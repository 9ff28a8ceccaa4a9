// What every step of one command computes with, decided once from the trainer
// config, the device and the switches (make_step_context): the device, the
// autocast of the run's precision, how batches cross to the device, the model's
// kernels, and what the CUDA graphs decision starts from. `salt fit`'s training
// step (TrainStepOptions::context), its validation, the tuners' trials, `salt
// validate`, `salt test` and the benches take it whole, so no stage works the
// precision or a switch out again.
#pragma once
#include <torch/torch.h>

#include "config/trainer_config.h"
#include "models/packing/forward_context.h"
#include "training/step/batch_device.h"
#include "training/step/forward_batch.h"
#include "training/step/step_options.h"

namespace salt::training {

// The CUDA graphs decision's inputs (TrainStep::start_graphs settles it).
struct GraphsChoice {
  bool wanted = false;         // SALT_CUDA_GRAPHS: on unless 0
  bool asked = false;          // set by name: a refusal is a warning, not an info line
  bool deterministic = false;  // trainer.deterministic: graphs only when asked by name
};

struct StepContext {
  TORCH_ARG(torch::Device, device) = torch::kCPU;
  TORCH_ARG(Autocast, autocast);
  TORCH_ARG(TransferOptions, transfer);
  TORCH_ARG(models::ForwardKernels, kernels);
  TORCH_ARG(GraphsChoice, graphs);
};

// trainer.precision's autocast on `device` (autocast_for), the switches' transfer
// and kernels (bucketed rows where bf16 steps run on the CPU), the graphs' choice.
StepContext make_step_context(const config::TrainerConfig& trainer, const torch::Device& device,
                              const StepOptions& switches);

}  // namespace salt::training
