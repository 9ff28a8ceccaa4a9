#include "training/threads.h"

#include <torch/torch.h>

#include <cstdlib>
#include <string>

#include "training/device.h"

namespace salt::training {

int configure_torch_threads(const TrainerConfig& trainer) {
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env && *env) {
    try {
      torch::set_num_threads(std::max(1, std::stoi(env)));
    } catch (...) {
    }
  } else if (select_device(trainer).is_cuda()) {
    torch::set_num_threads(1);
  }
  return torch::get_num_threads();
}

}  // namespace salt::training
