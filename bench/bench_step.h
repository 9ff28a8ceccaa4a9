// The training step the benches time: salt fit's own (training/step/train_step.h), so
// that a bench figure measures the step `salt fit` runs. tests/training/
// step/train_step_test.cpp checks that this step and salt fit's give bitwise the same
// loss and gradients.
#pragma once
#include <torch/torch.h>

#include <string>

#include "config/trainer_config.h"
#include "training/step/train_step.h"

namespace salt::bench {

// bench_model's step at its --precision ("32" or "bf16-mixed") on `device`: salt
// fit's for a trainer with that precision and no gradient clipping (as the PyTorch
// reference it is compared with).
inline training::TrainStepOptions bench_step_options(const torch::Device& device, const std::string& precision) {
  config::TrainerConfig trainer;
  trainer.precision = precision == "bf16-mixed" ? config::Precision::kBFloat16Mixed : config::Precision::kFloat32;
  return training::fit_step_options(trainer, device, training::read_step_options());
}

}  // namespace salt::bench
