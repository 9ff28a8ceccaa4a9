// `salt fit`: the training loop over a resolved config, as salt (Lightning) runs
// it: epochs of training then validation, AdamW + OneCycleLR per optimizer step,
// checkpoints after every validation, metrics.csv, resume from a checkpoint.
// Data parallel when a launcher started several processes (see lib/parallel and
// docs/distributed.md): each rank trains on its shard, gradients are averaged,
// rank 0 alone writes the run directory.
#pragma once
#include <yaml-cpp/yaml.h>

#include "config/compose.h"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "training/loop/epoch_resources.h"
#include "training/step/step_options.h"

namespace salt::training {

struct FitResult {
  std::filesystem::path run_dir;  // empty under fast_dev_run
  std::vector<std::filesystem::path> checkpoints;
  int64_t epochs_run = 0;
  int64_t global_step = 0;
  std::map<std::string, double> last_val_metrics;
  bool requeued = false;  // stopped by SIGUSR1 after saving ckpts/requeue.ckpt
  bool requeue_submitted = false;  // and Slurm was asked to requeue the job (rank 0; the others: it is a Slurm job)
  double train_seconds = 0;  // wall time in training batches (loading included, validation not)
  int64_t train_jets = 0;  // this process's share
  int rank = 0;            // data parallel: this process's rank (0 writes everything)
  int world_size = 1;      // processes in the run
  std::vector<EpochResources> resources;  // per stage: time, data wait, peak memory
  double host_reads_per_step = 0;  // device values read on the host per training step outside logging steps
  std::filesystem::path profile;   // trainer.profiler's report file (rank 0)
};

// Hooks that other parts of salt-cpp plug in around a fit (git checks and tags,
// batch-system requeue); all optional.
struct FitHooks {
  // Before anything is written, with the run directory that will be used (not
  // called under fast_dev_run; only on rank 0 of a data-parallel run). May throw to
  // refuse the run; returns metadata keys.
  std::function<YAML::Node(const std::filesystem::path& run_dir)> before_start;
};

// `options`: the switches as the command read them (run_command, before any worker
// starts); without them the fit reads them itself (read_step_options).
FitResult fit(const config::ResolvedConfig& resolved, const FitHooks& hooks = {},
              const std::optional<StepOptions>& options = std::nullopt);

// The mid-epoch checkpoint written on SIGUSR1 (a batch system's pre-timeout
// warning); a fit started in the same run directory resumes from it by itself.
inline constexpr const char* kRequeueCheckpoint = "requeue.ckpt";

}  // namespace salt::training
