#include "training/fit_plan.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/errors.h"

namespace salt::training {
namespace {

using config::BatchLimit;

bool dev_run(const config::TrainerConfig& t) { return t.fast_dev_run > 0; }
bool overfitting(const config::TrainerConfig& t) {
  return !dev_run(t) && t.overfit_batches.kind != BatchLimit::Kind::kAll;
}

// batch_in_epoch counts the saving run's per-rank batches; with another world size
// the same share of the epoch is skipped (the batches themselves differ a little).
int64_t skip_batches(const std::optional<ResumePoint>& resume, int world) {
  if (!resume || resume->batch_in_epoch < 0) return 0;
  return resume->batch_in_epoch * resume->saved_world / world;
}

// The optimizer steps a resumed run will take, counted at this run's steps per
// epoch, which may differ from the checkpoint's (another batch_size, num_train,
// limit or world size): the rest of a mid-epoch checkpoint's epoch, the epochs
// after it, capped by max_steps.
int64_t steps_this_run(const config::TrainerConfig& t, const TrainPlan& p, const ResumePoint& r, int world) {
  const bool mid_epoch = r.batch_in_epoch >= 0;
  const int64_t first_epoch = mid_epoch ? r.epoch : r.epoch + 1;
  const int64_t accumulate = t.accumulate_grad_batches;
  int64_t steps = t.max_steps > 0 ? t.max_steps - r.global_step : 0;
  if (p.max_epochs > 0) {
    int64_t by_epochs = std::max<int64_t>(0, p.max_epochs - first_epoch) * p.steps_per_epoch;
    if (mid_epoch) by_epochs -= std::min(p.steps_per_epoch, (skip_batches(r, world) + accumulate - 1) / accumulate);
    steps = t.max_steps > 0 ? std::min(steps, by_epochs) : by_epochs;
  }
  return std::max<int64_t>(0, steps);
}

// What makes a resumed run longer than its checkpoint's schedule, as far as the
// checkpoint tells: more steps per epoch (its run planned max_epochs x steps per
// epoch, with no max_steps), or more epochs or steps.
std::string why_more_steps(const config::TrainerConfig& t, const TrainPlan& p, const ResumePoint& r, int world) {
  const int64_t planned = r.scheduler_total_steps, epochs = r.saved_max_epochs;
  if (epochs > 0 && r.saved_max_steps <= 0 && planned % epochs == 0 && planned / epochs != p.steps_per_epoch) {
    const std::string cause =
        r.saved_world != world
            ? std::to_string(world) + " process(es) where it had " + std::to_string(r.saved_world)
            : "another batch_size, accumulate_grad_batches, limit_train_batches or number of training jets";
    return "this run has " + std::to_string(p.steps_per_epoch) + " optimizer steps per epoch where the checkpoint's "
           "run had " + std::to_string(planned / epochs) + ": " + cause;
  }
  if (epochs > 0 && p.max_epochs > epochs)
    return "trainer.max_epochs " + std::to_string(p.max_epochs) + " where the original run had " +
           std::to_string(epochs);
  if (r.saved_max_steps > 0 && t.max_steps > r.saved_max_steps)
    return "trainer.max_steps " + std::to_string(t.max_steps) + " where the original run had " +
           std::to_string(r.saved_max_steps);
  return "trainer.max_epochs/max_steps larger than the original run's, or more steps per epoch";
}

// The schedule continues where it was when the steps left fit its plan. torch
// would fail stepping past it, possibly hours in, so a longer run is refused up
// front, unless lrs_config.last_epoch is set: then, as salt's training guide
// intends, a new one-cycle schedule over this run's steps starts at last_epoch + 1.
void keep_resumed_schedule(const config::TrainerConfig& t, TrainPlan& p, const ResumePoint& r, int world,
                           int64_t lrs_last_epoch) {
  const int64_t wanted = p.total_steps, planned = r.scheduler_total_steps;
  const int64_t position =
      r.scheduler_last_epoch >= 0 ? r.scheduler_last_epoch : r.global_step + lrs_last_epoch + 1;
  const int64_t steps_left = steps_this_run(t, p, r, world);
  if (position + steps_left <= planned) {
    p.total_steps = planned;
    p.schedule_position = position;
    return;
  }
  if (lrs_last_epoch >= 0) {
    p.schedule_position = lrs_last_epoch + 1;
    p.new_schedule = true;
    return;
  }
  throw UsageError("this run would take " + std::to_string(steps_left) + " more optimizer steps but the " +
                   "checkpoint's one-cycle schedule has " + std::to_string(std::max<int64_t>(0, planned - position)) +
                   " left (" + why_more_steps(t, p, r, world) + "); keep the original " +
                   "settings, or add --model.lrs_config.last_epoch 0 to start a new schedule over this run's " +
                   std::to_string(wanted) + " steps (salt's training guide)");
}

// After how many training batches validation runs (Lightning's val_check_batch).
int64_t check_batch(const config::TrainerConfig& t, const TrainPlan& train) {
  const auto& interval = t.val_check_interval;
  if (dev_run(t) || interval.kind == BatchLimit::Kind::kAll) return train.train_batches;
  if (interval.kind == BatchLimit::Kind::kFraction)
    return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(train.train_batches) * interval.value));
  const auto batches = static_cast<int64_t>(interval.value);
  if (t.check_val_every_n_epoch > 0 && batches > train.train_batches)
    throw UsageError("'trainer.val_check_interval' (" + std::to_string(batches) +
                     ") must not exceed the training batches per epoch (" + std::to_string(train.train_batches) +
                     "); set 'trainer.check_val_every_n_epoch' to null to count batches across epochs");
  return batches;
}

// a x b, or INT64_MAX where that overflows (max_epochs may be set huge).
int64_t product(int64_t a, int64_t b) {
  int64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? INT64_MAX : out;
}

// A run that ends at max_epochs: one stopped by max_steps validates once more
// before it ends, whatever the interval.
bool ends_at_max_epochs(const config::TrainerConfig& t, const TrainPlan& train) {
  if (train.max_epochs <= 0) return false;
  return t.max_steps <= 0 || t.max_steps > product(train.max_epochs, train.steps_per_epoch);
}

// Validation planned so that it never comes: no validation loss, so no checkpoint,
// and the run would still say "finished". Lightning trains on without a word then;
// salt-cpp refuses before training. Returns why, or "" when validation comes.
std::string never_validates(const config::TrainerConfig& t, const ValPlan& v, const TrainPlan& train) {
  if (v.val_batches <= 0 || dev_run(t) || !ends_at_max_epochs(t, train)) return "";
  const std::string epochs = "'trainer.max_epochs' " + std::to_string(train.max_epochs);
  const int64_t batches = product(train.max_epochs, train.train_batches);
  if (v.every_n_epoch == 0 && v.check_batch > batches)
    return "'trainer.val_check_interval' (" + std::to_string(v.check_batch) +
           ") with 'trainer.check_val_every_n_epoch' null counts training batches across epochs, but this fit runs " +
           std::to_string(batches) + " (" + epochs + " x " + std::to_string(train.train_batches) + " per epoch)";
  // Within the epochs check_val_every_n_epoch picks; only a validation at the epoch's
  // end comes at the last epoch too.
  if (v.every_n_epoch > train.max_epochs && !v.at_epoch_end_only())
    return "'trainer.check_val_every_n_epoch' (" + std::to_string(v.every_n_epoch) + ") exceeds " + epochs +
           " and 'trainer.val_check_interval' validates within the epochs it picks";
  return "";
}

}  // namespace

bool shuffles(const config::TrainerConfig& t) { return !overfitting(t); }

void keep_configured_schedule(TrainPlan& plan, int64_t schedule_steps, int64_t configured, int64_t found) {
  if (plan.total_steps > schedule_steps)
    throw UsageError("BatchSizeFinder: data.batch_size " + std::to_string(found) + " trains " +
                     std::to_string(plan.total_steps) + " optimizer steps, more than the " +
                     std::to_string(schedule_steps) + " of the one-cycle schedule planned before the finder at " +
                     "data.batch_size " + std::to_string(configured) +
                     " (as Lightning plans it: salt's OneCycleLR would stop the run at step " +
                     std::to_string(schedule_steps + 1) + "); set data.batch_size: " + std::to_string(found) +
                     " without the finder, or trainer.max_steps: " + std::to_string(schedule_steps));
  plan.total_steps = schedule_steps;
}

TrainPlan plan_training(const config::TrainerConfig& t, const TrainCounts& c, const std::optional<ResumePoint>& resume,
                        int64_t lrs_last_epoch) {
  TrainPlan p;
  const int64_t available = c.available_batches;
  p.train_batches = dev_run(t) ? std::min(t.fast_dev_run, available) : t.limit_train.apply(available);
  p.shuffle = shuffles(t);
  if (overfitting(t)) {
    p.train_batches = t.overfit_batches.apply(available);
  }
  if (p.train_batches <= 0)
    throw UsageError("no training batches: " + std::to_string(c.rows) + " training jets with batch_size " +
                     std::to_string(c.batch_size) +
                     (c.world > 1 ? " over " + std::to_string(c.world) + " processes" : "") +
                     " (the partial last batch is dropped)");
  // Steps per epoch are per rank: the global batch is batch_size x world size.
  p.steps_per_epoch = (p.train_batches + t.accumulate_grad_batches - 1) / t.accumulate_grad_batches;
  p.max_epochs = dev_run(t) ? 1 : t.max_epochs;
  p.total_steps = p.max_epochs > 0 ? p.steps_per_epoch * p.max_epochs : t.max_steps;
  if (t.max_steps > 0 && !dev_run(t)) p.total_steps = std::min(p.total_steps, t.max_steps);
  if (resume && resume->scheduler_total_steps > 0) keep_resumed_schedule(t, p, *resume, c.world, lrs_last_epoch);
  // A mid-epoch (requeue) checkpoint continues its epoch after the batches it had done.
  if (resume) p.start_epoch = resume->batch_in_epoch >= 0 ? resume->epoch : resume->epoch + 1;
  p.skip_batches = skip_batches(resume, c.world);
  return p;
}

ValPlan plan_validation(const config::TrainerConfig& t, int64_t available, const TrainPlan& train) {
  ValPlan v;
  v.val_batches = dev_run(t) ? std::min(t.fast_dev_run, available) : t.limit_val.apply(available);
  if (overfitting(t)) v.val_batches = t.overfit_batches.apply(available);
  v.train_batches = train.train_batches;
  v.every_n_epoch = t.check_val_every_n_epoch;
  v.max_epochs = train.max_epochs;
  v.check_batch = check_batch(t, train);
  if (const auto why = never_validates(t, v, train); !why.empty())
    throw UsageError(why + ": validation would never run, so no validation loss and no checkpoint; validate sooner, "
                           "or set 'trainer.limit_val_batches' to 0 to train without validation");
  return v;
}

// Lightning's val_check_interval: validation after every check_batch-th training
// batch of the epochs every_n_epoch picks (0: counted across epochs).
bool ValPlan::after_batch(int64_t epoch, int64_t b) const {
  if (val_batches <= 0 || at_epoch_end_only()) return false;
  if (every_n_epoch > 0 && (epoch + 1) % every_n_epoch != 0) return false;
  const int64_t iteration = every_n_epoch > 0 ? b : epoch * train_batches + b;
  return (iteration + 1) % check_batch == 0;
}

bool ValPlan::at_epoch_end(int64_t epoch) const {
  if (val_batches <= 0) return false;
  if (at_epoch_end_only()) return (epoch + 1) % every_n_epoch == 0 || epoch + 1 == max_epochs;
  return after_batch(epoch, train_batches - 1);
}

}  // namespace salt::training
