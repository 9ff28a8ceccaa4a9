#include "training/loop/fit_support.h"

#include <cstdlib>

#include "config/compose.h"
#include "config/trainer_config.h"
#include "core/errors.h"
#include "core/signals.h"
#include "training/loop/fit.h"
#include "training/checkpoints/rng_state.h"

namespace salt::training {
namespace fs = std::filesystem;

std::string nan_message(const std::string& what, int64_t epoch, int64_t step, const fs::path& run_dir) {
  std::string msg = what + " is not finite at epoch " + std::to_string(epoch) + ", step " + std::to_string(step) +
                    "; training stopped (see docs/training.md, 'NaN losses': check inputs for NaN/inf, "
                    "lower lrs_config.max, or set trainer.gradient_clip_val)";
  if (!run_dir.empty()) msg += "; checkpoints so far are in " + (run_dir / "ckpts").string();
  return msg;
}

CheckpointState capture_state(const RunSetup& setup, Optimization& optimization, int64_t epoch, int64_t global_step,
                              int64_t total_steps) {
  CheckpointState state;
  state.epoch = epoch;
  state.global_step = global_step;
  state.config_yaml = config::to_yaml(setup.config);
  state.state_dict = module_state(*setup.model);
  state.adam_state = adam_state(optimization);
  state.scheduler_total_steps = total_steps;
  state.scheduler_last_epoch = optimization.schedule_index();
  state.cpu_rng_state = cpu_rng_state();
  return state;
}

void save_requeue_checkpoint(const fs::path& run_dir, CheckpointState state, int64_t batch_in_epoch,
                             const Optimization& optimization) {
  state.batch_in_epoch = batch_in_epoch;
  auto path = run_dir / "ckpts" / kRequeueCheckpoint;
  fs::create_directories(path.parent_path());
  save_checkpoint(path, state, &optimization);
  spdlog::warn("SIGUSR1: saved {} at epoch {}, batch {} (step {})", path.string(), state.epoch, batch_in_epoch,
               state.global_step);
}

bool in_requeueable_slurm_job() {
  const char* job = std::getenv("SLURM_JOB_ID");
  return job && *job && std::string(job).find_first_not_of("0123456789") == std::string::npos;
}

bool request_requeue() {
  const char* job = std::getenv("SLURM_JOB_ID");
  if (!job || !*job) {
    spdlog::warn("not running under Slurm (no SLURM_JOB_ID): not requeued; rerun the same command to resume");
    return false;
  }
  // The id goes to a shell: only what Slurm itself sets (digits) is passed on.
  if (!in_requeueable_slurm_job()) {
    spdlog::error("SLURM_JOB_ID is not a Slurm job id (digits only): not requeued; resume by resubmitting the same job");
    return false;
  }
  std::string command = std::string("scontrol requeue ") + job;
  spdlog::info("requeueing: {}", command);
  if (std::system(command.c_str()) != 0) {
    spdlog::error("'{}' failed; resume by resubmitting the same job", command);
    return false;
  }
  return true;
}

void check_stop() {
  if (int sig = stop_signal()) throw StopRequested{sig};
}

int saved_world_size(const std::string& config_yaml, int world) {
  if (config_yaml.empty()) return world;
  try {
    const auto trainer = config::trainer_config_from_yaml(YAML::Load(config_yaml));
    return std::max(1, trainer.num_devices * trainer.num_nodes);
  } catch (const std::exception&) {
    return 1;
  }
}

std::pair<int64_t, int64_t> saved_epochs_and_steps(const std::string& config_yaml) {
  if (config_yaml.empty()) return {-1, -1};
  try {
    const auto trainer = config::trainer_config_from_yaml(YAML::Load(config_yaml));
    return {trainer.max_epochs, trainer.max_steps};
  } catch (const std::exception&) {
    return {-1, -1};
  }
}

}  // namespace salt::training
