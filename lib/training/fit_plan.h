// What `salt fit` will do, worked out before it does it: batches per epoch, the
// optimizer steps and the one-cycle schedule's length, where a resumed run starts,
// and when it validates. Pure arithmetic on the trainer settings, the batch counts
// the samplers offer and the checkpoint's position: no torch, no files, so every
// rule is unit-tested in milliseconds (tests/training/fit_plan_test.cpp).
#pragma once
#include <cstdint>
#include <optional>

#include "config/trainer_config.h"

namespace salt::training {

// Where a checkpoint left the run.
struct ResumePoint {
  int64_t epoch = 0;
  int64_t global_step = 0;
  int64_t batch_in_epoch = -1;        // >= 0: saved mid-epoch (requeue) after this many per-rank batches
  int64_t scheduler_total_steps = 0;  // the one-cycle schedule's length (0: none recorded)
  int64_t scheduler_last_epoch = -1;  // the schedule's position (-1: not recorded)
  int saved_world = 1;                // processes of the run that saved it
  int64_t saved_max_epochs = -1;      // its trainer.max_epochs and max_steps (-1: not known,
  int64_t saved_max_steps = -1;       // e.g. salt's checkpoints): for the refusal's reason
};

// The training data as the plan sees it (per rank).
struct TrainCounts {
  int64_t available_batches = 0;  // full batches per epoch this rank's sampler offers
  int64_t rows = 0;               // for the refusal's message
  int64_t batch_size = 0;
  int world = 1;
};

struct TrainPlan {
  int64_t train_batches = 0;    // batches per epoch
  int64_t steps_per_epoch = 0;  // optimizer steps per epoch (accumulation rounds up)
  int64_t max_epochs = 0;       // -1: until max_steps
  int64_t total_steps = 0;      // the one-cycle schedule's length
  bool shuffle = true;          // false under overfit_batches (Lightning: same batches, file order)
  int64_t schedule_position = -1;  // resuming: the schedule step the first step uses (-1: the optimizer's count)
  bool new_schedule = false;       // resuming with lrs_config.last_epoch: a fresh schedule over this run's steps
  int64_t start_epoch = 0;
  int64_t skip_batches = 0;  // of start_epoch: done before a mid-epoch checkpoint
};

// Throws UsageError when there is nothing to train, or when a resumed run would
// step past its checkpoint's schedule (unless lrs_last_epoch >= 0 starts a new one).
TrainPlan plan_training(const config::TrainerConfig& trainer, const TrainCounts& counts,
                        const std::optional<ResumePoint>& resume, int64_t lrs_last_epoch);

// A batch size found by BatchSizeFinder trains on the one-cycle schedule of
// `schedule_steps` that Lightning planned before the finder ran (configure_optimizers,
// at data.batch_size `configured`): plan.total_steps becomes it. A plan of more
// optimizer steps than that is refused (UsageError), where salt's OneCycleLR would
// stop the run at the first step past its end.
void keep_configured_schedule(TrainPlan& plan, int64_t schedule_steps, int64_t configured, int64_t found);

// Whether the training batches are shuffled (TrainPlan::shuffle), known before the plan.
bool shuffles(const config::TrainerConfig& trainer);

// Validation: how many batches, and after which training batches (Lightning's
// val_check_interval and check_val_every_n_epoch).
struct ValPlan {
  int64_t val_batches = 0;      // 0: no validation (limit_val_batches 0)
  int64_t train_batches = 0;    // of the TrainPlan
  int64_t check_batch = 0;      // validate after every this many training batches
  int64_t every_n_epoch = 1;    // 0: batches counted across epochs
  int64_t max_epochs = 0;

  // A validation after training batch b (0-based) of `epoch`, within the epoch.
  bool after_batch(int64_t epoch, int64_t b) const;
  bool at_epoch_end_only() const { return check_batch == train_batches && every_n_epoch > 0; }
  // At the end of `epoch` (a run that stops early decides for itself).
  bool at_epoch_end(int64_t epoch) const;
};

// Throws UsageError when an integer val_check_interval exceeds an epoch's batches.
ValPlan plan_validation(const config::TrainerConfig& trainer, int64_t available_val_batches, const TrainPlan& train);

}  // namespace salt::training
