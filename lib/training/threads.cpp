#include "training/threads.h"

#include <sched.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/errors.h"
#include "training/device.h"

namespace salt::training {

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

std::optional<int> threads_from_env(const char* value, int cores) {
  const std::string v = value ? value : "";
  if (v.empty()) return std::nullopt;
  const int most = kMaxThreadsPerCore * cores;
  // Digits only (no sign, space or fraction), and few enough that the number fits.
  const bool whole = v.size() <= 9 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long threads = whole ? std::stol(v) : 0;
  if (threads < 1 || threads > most)
    throw UsageError("OMP_NUM_THREADS=" + v + ": expected a whole number from 1 to " + std::to_string(most) + " (" +
                     std::to_string(kMaxThreadsPerCore) + " threads for each of the " + std::to_string(cores) +
                     " cores this process may use)");
  return static_cast<int>(threads);
}

std::optional<int> threads_from_env() { return threads_from_env(std::getenv("OMP_NUM_THREADS"), usable_cores()); }

int configure_torch_threads(const TrainerConfig& trainer) {
  if (const auto threads = threads_from_env()) {
    torch::set_num_threads(*threads);
  } else if (select_device(trainer).is_cuda()) {
    torch::set_num_threads(1);
  }
  return torch::get_num_threads();
}

}  // namespace salt::training
