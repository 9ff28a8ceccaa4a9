#include "training/threads.h"

#include <torch/torch.h>

#include <cstdlib>
#include <string>

namespace salt::training {

int configure_torch_threads() {
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env && *env) {
    try {
      torch::set_num_threads(std::max(1, std::stoi(env)));
    } catch (...) {
    }
  }
  return torch::get_num_threads();
}

}  // namespace salt::training
