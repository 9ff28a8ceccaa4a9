// Which device a run uses, from trainer.accelerator and trainer.devices.
#pragma once
#include <torch/torch.h>

#include "training/trainer_config.h"

namespace salt::training {

// CPU, or the CUDA device the config asks for (local_rank selects among several).
// UsageError when a GPU is asked for and none is available, naming the fix.
torch::Device select_device(const TrainerConfig& trainer, int local_rank = 0);

}  // namespace salt::training
