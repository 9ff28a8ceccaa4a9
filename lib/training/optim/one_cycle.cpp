#include "training/optim/one_cycle.h"

#include <cmath>
#include <string>

#include "core/errors.h"

namespace salt::training {
namespace {

double cos_anneal(double start, double end, double pct) { return end + (start - end) / 2.0 * (std::cos(M_PI * pct) + 1); }

}  // namespace

OneCycleSchedule::OneCycleSchedule(const LrsConfig& lrs, int64_t total_steps, double base_momentum, double max_momentum)
    : total_steps_(total_steps), base_momentum_(base_momentum), max_momentum_(max_momentum) {
  if (total_steps <= 0)
    throw UsageError("the one-cycle schedule needs at least one training step (check data.num_train, "
                     "data.batch_size and trainer.max_epochs)");
  if (!(lrs.initial > 0 && lrs.max > 0 && lrs.end > 0))
    throw UsageError("model.lrs_config: initial, max and end must be positive");
  if (!(lrs.pct_start >= 0 && lrs.pct_start <= 1)) throw UsageError("model.lrs_config.pct_start must be in [0, 1]");
  max_lr_ = lrs.max;
  initial_lr_ = max_lr_ / (lrs.max / lrs.initial);
  min_lr_ = initial_lr_ / (lrs.initial / lrs.end);
  // As torch: phase 1 ends at step pct_start * total - 1, phase 2 at total - 1.
  phase1_end_ = lrs.pct_start * static_cast<double>(total_steps) - 1;
  phase2_end_ = static_cast<double>(total_steps) - 1;
}

OneCycleSchedule::Point OneCycleSchedule::at(int64_t step) const {
  // torch allows stepping up to total_steps (inclusive) and raises after.
  if (step > total_steps_)
    throw UsageError("the one-cycle schedule was stepped " + std::to_string(step) + " times but plans " +
                     std::to_string(total_steps_) + " steps; set model.lrs_config.last_epoch when resuming past it");
  const double s = static_cast<double>(step);
  if (s <= phase1_end_) {
    double pct = phase1_end_ > 0 ? s / phase1_end_ : 1.0;
    return {cos_anneal(initial_lr_, max_lr_, pct), cos_anneal(max_momentum_, base_momentum_, pct)};
  }
  double span = phase2_end_ - phase1_end_;
  double pct = span > 0 ? (s - phase1_end_) / span : 1.0;
  return {cos_anneal(max_lr_, min_lr_, pct), cos_anneal(base_momentum_, max_momentum_, pct)};
}

double OneCycleSchedule::lr(int64_t step) const { return at(step).lr; }
double OneCycleSchedule::beta1(int64_t step) const { return at(step).momentum; }

}  // namespace salt::training
