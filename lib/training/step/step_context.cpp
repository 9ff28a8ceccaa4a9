#include "training/step/step_context.h"

namespace salt::training {

StepContext make_step_context(const config::TrainerConfig& trainer, const torch::Device& device,
                              const StepOptions& switches) {
  const auto autocast = autocast_for(trainer.precision, device);
  GraphsChoice graphs;
  graphs.wanted = switches.cuda_graphs.value;
  graphs.asked = switches.cuda_graphs.source == OptionSource::kEnvironment;
  graphs.deterministic = trainer.deterministic;
  return StepContext()
      .device(device)
      .autocast(autocast)
      .transfer(transfer_from(switches))
      .kernels(forward_kernels(switches, cpu_bf16_steps(autocast, device)))
      .graphs(graphs);
}

}  // namespace salt::training
