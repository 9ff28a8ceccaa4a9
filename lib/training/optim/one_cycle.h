// salt's learning-rate schedule: torch.optim.lr_scheduler.OneCycleLR with cosine
// annealing, two phases, and Adam's beta1 cycled 0.95 -> 0.85 -> 0.95, stepped once
// per optimizer step. Pure arithmetic, so it is checked against PyTorch's
// formulas value by value.
#pragma once
#include <cstdint>

#include "config/lrs_config.h"

namespace salt::training {

// `model.lrs_config` as salt maps it onto OneCycleLR.
using config::LrsConfig;

class OneCycleSchedule {
 public:
  // max_lr = max, div_factor = max / initial, final_div_factor = initial / end.
  OneCycleSchedule(const LrsConfig& lrs, int64_t total_steps, double base_momentum = 0.85, double max_momentum = 0.95);

  // Learning rate and beta1 for the optimizer step with index `step` (0-based:
  // the values used by the first optimizer step are lr(0), beta1(0)).
  double lr(int64_t step) const;
  double beta1(int64_t step) const;

  int64_t total_steps() const { return total_steps_; }
  double initial_lr() const { return initial_lr_; }
  double max_lr() const { return max_lr_; }
  double min_lr() const { return min_lr_; }
  // beta1's bounds; OneCycleLR stores them in every param group it cycles.
  double base_momentum() const { return base_momentum_; }
  double max_momentum() const { return max_momentum_; }

 private:
  struct Point {
    double lr;
    double momentum;
  };
  Point at(int64_t step) const;

  int64_t total_steps_;
  double initial_lr_, max_lr_, min_lr_;
  double base_momentum_, max_momentum_;
  double phase1_end_, phase2_end_;
};

}  // namespace salt::training
