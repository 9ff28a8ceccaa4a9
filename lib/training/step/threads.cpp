#include "training/step/threads.h"

#include <torch/torch.h>

#include <string>

#include "core/env_switch.h"
#include "dist/launch_env.h"
#include "training/step/device.h"

namespace salt::training {

std::optional<int> threads_from_env(const char* value, int cores) {
  const auto threads = env_whole_number("OMP_NUM_THREADS", value, 1, kMaxThreadsPerCore * cores,
                                        std::to_string(kMaxThreadsPerCore) + " threads for each of the " +
                                            std::to_string(cores) + " cores this process may use");
  if (!threads) return std::nullopt;
  return static_cast<int>(*threads);
}

ThreadChoice configure_torch_threads(const TrainerConfig& trainer, const StepOption<int>& threads) {
  ThreadChoice choice;
  if (threads.source == OptionSource::kEnvironment) {
    choice = {threads.value, "OMP_NUM_THREADS"};
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
