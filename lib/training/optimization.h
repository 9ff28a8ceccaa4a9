// AdamW driven by salt's one-cycle schedule: the learning rate and beta1 of every
// optimizer step come from OneCycleSchedule, exactly as torch's OneCycleLR sets
// them (stepped per optimizer step, not per batch, with gradient accumulation).
#pragma once
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "training/one_cycle.h"

namespace salt::training {

class Optimization {
 public:
  // `steps_done` optimizer steps have already been taken (resuming).
  Optimization(std::vector<torch::Tensor> parameters, const LrsConfig& lrs, int64_t total_steps,
               int64_t steps_done = 0);

  void zero_grad();
  // One optimizer step at the schedule's current values; then the schedule advances.
  void step();

  int64_t steps_done() const { return steps_done_; }
  // The learning rate (and beta1) the next step will use, as logged by salt.
  double current_lr() const;
  double current_beta1() const;
  const OneCycleSchedule& schedule() const { return schedule_; }
  torch::optim::AdamW& adamw() { return *adamw_; }
  const torch::optim::AdamW& adamw() const { return *adamw_; }
  const std::vector<torch::Tensor>& parameters() const { return parameters_; }

 private:
  int64_t schedule_index() const { return steps_done_ + offset_; }
  void apply_schedule();

  std::vector<torch::Tensor> parameters_;
  OneCycleSchedule schedule_;
  std::unique_ptr<torch::optim::AdamW> adamw_;
  int64_t steps_done_ = 0;
  int64_t offset_ = 0;  // lrs_config.last_epoch + 1
};

}  // namespace salt::training
