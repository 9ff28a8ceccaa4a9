#include "training/loop/run_processes.h"

#include "training/step/device.h"

namespace salt::training {

RunProcesses join_processes(const TrainerConfig& trainer) {
  RunProcesses p;
  p.env = parallel::Session::environment_for(trainer.num_devices, trainer.num_nodes);
  p.device = select_device(trainer, p.env.local_rank);
  if (p.env.distributed()) p.session = parallel::Session::join(p.env, p.device);
  p.rank = p.session ? p.session->rank() : 0;
  p.world = p.session ? p.session->size() : 1;
  return p;
}

}  // namespace salt::training
