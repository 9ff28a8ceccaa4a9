// Pieces of the fit loop that are not the loop: NaN messages, checkpoint state,
// the Slurm requeue, quiet logs on ranks > 0, removal of a run directory that a
// failed start created.
#pragma once
#include <spdlog/spdlog.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "training/checkpoints/checkpoint.h"
#include "training/optim/optimization.h"
#include "training/run_setup.h"
#include "core/remove_tree.h"

namespace salt::training {

// "train/loss is not finite at epoch E, step S; training stopped (see docs...)".
std::string nan_message(const std::string& what, int64_t epoch, int64_t step, const std::filesystem::path& run_dir);

// The full training state at this point, as a checkpoint holds it.
CheckpointState capture_state(const RunSetup& setup, Optimization& optimization, int64_t epoch, int64_t global_step,
                              int64_t total_steps);

// ckpts/requeue.ckpt: `state` (capture_state's) mid-epoch, after `batch_in_epoch`
// training batches.
void save_requeue_checkpoint(const std::filesystem::path& run_dir, CheckpointState state, int64_t batch_in_epoch,
                             const Optimization& optimization);

// Under Slurm, puts this job back in the queue; its next start resumes from the
// requeue checkpoint (same run directory: a fixed --log_suffix and -oc).
// Returns whether Slurm was asked to requeue the job (scontrol requeue ran and
// succeeded); false outside Slurm or when SLURM_JOB_ID is not a job id.
bool request_requeue();
// Whether this process runs in a Slurm job whose id `scontrol requeue` can take.
bool in_requeueable_slurm_job();

// Throws StopRequested when SIGINT/SIGTERM arrived.
void check_stop();

// The number of processes a checkpoint's run had (its saved trainer.devices x num_nodes).
// A checkpoint without salt-cpp's config (salt's): `world`, this run's, since
// Lightning resumes its batch_progress (the saving rank's batches) as each rank's
// count whatever world size wrote it.
int saved_world_size(const std::string& config_yaml, int world);
// A checkpoint's saved trainer.max_epochs and max_steps; {-1, -1} without salt-cpp's config.
std::pair<int64_t, int64_t> saved_epochs_and_steps(const std::string& config_yaml);

// Ranks other than 0 log warnings and errors only: one copy of every info line.
class QuietLogs {
 public:
  explicit QuietLogs(bool quiet) : previous_(spdlog::get_level()), quiet_(quiet) {
    if (quiet_) spdlog::set_level(spdlog::level::warn);
  }
  ~QuietLogs() {
    if (quiet_) spdlog::set_level(previous_);
  }
  QuietLogs(const QuietLogs&) = delete;
  QuietLogs& operator=(const QuietLogs&) = delete;

 private:
  spdlog::level::level_enum previous_;
  bool quiet_;
};

// Removes a run directory that did not exist when the run started, if the run
// fails before its first optimizer step (config, data and git problems found
// late, e.g. a bad first batch). Later failures keep it: it holds metrics and
// checkpoints by then.
class RunDirCleanup {
 public:
  // dir: a run directory this run created (empty: nothing to remove); parents: the
  // ancestors it created too, deepest first, removed only if left empty.
  explicit RunDirCleanup(std::filesystem::path dir, std::vector<std::filesystem::path> parents = {})
      : armed_(!dir.empty()), dir_(std::move(dir)), parents_(std::move(parents)) {}
  RunDirCleanup(const RunDirCleanup&) = delete;
  RunDirCleanup& operator=(const RunDirCleanup&) = delete;
  ~RunDirCleanup() {
    if (!armed_ || std::uncaught_exceptions() == 0) return;
    std::error_code ec;
    salt::remove_tree(dir_, ec);
    for (const auto& p : parents_)
      if (!std::filesystem::remove(p, ec)) break;  // another run's directory is in it
  }
  void disarm() { armed_ = false; }

 private:
  bool armed_;
  std::filesystem::path dir_;
  std::vector<std::filesystem::path> parents_;
};

}  // namespace salt::training
