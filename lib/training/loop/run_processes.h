// This process's place in a fit, the first of the fit's set-up parts (FitRun):
// its device and, with several processes, the session over them, its rank and
// the world. A single process is rank 0 of 1 with no session.
#pragma once
#include <torch/torch.h>

#include <memory>

#include "parallel/grad_sync.h"
#include "parallel/launch_env.h"
#include "parallel/session.h"
#include "training/trainer_config.h"

namespace salt::training {

struct RunProcesses {
  torch::Device device{torch::kCPU};
  std::unique_ptr<parallel::Session> session;  // null: one process
  parallel::DistEnv env;                       // what the launcher said
  int rank = 0, world = 1;
  std::unique_ptr<parallel::GradSync> grad_sync;  // the gradients' all-reduce, once the model is placed
  bool main_rank() const { return rank == 0; }
};

// The launcher's environment checked against trainer.devices x num_nodes, this
// process's device (its local rank's card, or the CPU), and the session joined
// when there are several processes.
RunProcesses join_processes(const TrainerConfig& trainer);

}  // namespace salt::training
