#include "training/threads.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/errors.h"
#include "dist/launch_env.h"
#include "training/device.h"

namespace salt::training {

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

std::optional<int> threads_from_env() { return threads_from_env(std::getenv("OMP_NUM_THREADS"), affinity_cores()); }

ThreadChoice configure_torch_threads(const TrainerConfig& trainer) {
  ThreadChoice choice;
  if (const auto threads = threads_from_env()) {
    choice = {*threads, "OMP_NUM_THREADS"};
  } else {
    auto in = this_machine();
    in.local_ranks = dist::read_dist_env(dist::process_environment()).local_world_size;
    in.on_gpu = select_device(trainer).is_cuda();
    choice = choose_threads(in);
  }
  torch::set_num_threads(choice.threads);
  return {torch::get_num_threads(), choice.why};
}

}  // namespace salt::training
