// salt's optimizer (`model.optimizer`) driven by salt's one-cycle schedule: the
// learning rate of every optimizer step comes from OneCycleSchedule, exactly as
// torch's OneCycleLR sets it (stepped per optimizer step, not per batch, with
// gradient accumulation). As in salt's configure_optimizers:
//   AdamW            torch AdamW(lr, weight_decay); beta1 cycled 0.95 -> 0.85 -> 0.95
//                    (LibTorch's update with multi-tensor kernels: foreach_adamw.h)
//   lion             lion_pytorch Lion(lr, weight_decay), betas (beta1, 0.99); beta1 cycled
//   HybridMuonAdamW  Muon for the 2-D matrices is_muon_param picks (momentum 0.95),
//                    AdamW (betas 0.9, 0.999) for the rest; nothing cycled
//                    (OneCycleLR(cycle_momentum=False)), both get the scheduled lr.
#pragma once
#include <torch/torch.h>

#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "training/optim/one_cycle.h"

namespace salt::training {

enum class OptimizerKind { kAdamW, kLion, kHybridMuonAdamW };

// salt's `model.optimizer` value ("AdamW", "lion", "HybridMuonAdamW"); others are a UsageError.
OptimizerKind optimizer_kind(const std::string& name);

class Optimization {
 public:
  using NamedParameters = torch::OrderedDict<std::string, torch::Tensor>;

  // `parameters` as model->named_parameters(); `steps_done` optimizer steps have
  // already been taken (resuming). HybridMuonAdamW with no parameter for Muon, or
  // none for AdamW, is a UsageError (salt raises ValueError).
  // mup_width_mults (muP, models/mup.h): parameter name -> width multiplier m for
  // the parameters with two width dimensions. As mup's MuAdamW they get their own
  // AdamW param group with lr / m and weight_decay * m; the one-cycle schedule then
  // scales every group's lr by the same factor, keeping the 1 / m (salt's OneCycleLR
  // gives every group the same lr, which undoes MuAdamW's scaling). AdamW only.
  Optimization(const NamedParameters& parameters, OptimizerKind kind, const LrsConfig& lrs, int64_t total_steps,
               int64_t steps_done = 0, const std::map<std::string, double>& mup_width_mults = {});

  // The learning rate factor of each param group of optimizers()[0] (1 without muP).
  const std::vector<double>& group_lr_scales() const { return group_lr_scales_; }

  void zero_grad();
  // One optimizer step at the schedule's current values; then the schedule advances.
  // update_parameters false: the step is skipped (a loss-scaled step with inf/NaN
  // gradients) but counted, and the schedule advances, as under Lightning.
  void step(bool update_parameters = true);

  OptimizerKind kind() const { return kind_; }
  // The optimizer's Python class name, as Lightning's LearningRateMonitor names its
  // metrics (lr-AdamW, lr-Lion, lr-HybridMuonAdamW).
  std::string class_name() const;
  int64_t steps_done() const { return steps_done_; }
  // The learning rate (and beta1) the next step will use, as logged by salt. For
  // HybridMuonAdamW beta1 is 0: its wrapper has no betas, Lightning logs momentum 0.
  double current_lr() const;
  double current_beta1() const;
  // The one-cycle schedule's learning rate and beta1 at schedule step `index` (what
  // current_lr/current_beta1 gave there, had nothing overridden them).
  double schedule_lr_at(int64_t index) const;
  double schedule_beta1_at(int64_t index) const;
  double weight_decay() const { return weight_decay_; }
  const OneCycleSchedule& schedule() const { return schedule_; }

  // All parameters, in model order, and their names.
  const std::vector<torch::Tensor>& parameters() const { return parameters_; }
  const std::vector<std::string>& parameter_names() const { return names_; }
  // The optimizers that step them: one; for HybridMuonAdamW Muon then AdamW.
  const std::vector<std::unique_ptr<torch::optim::Optimizer>>& optimizers() const { return optimizers_; }
  // The optimizer stepping parameters()[i]; nullptr for a frozen parameter that
  // HybridMuonAdamW leaves out (AdamW and Lion hold all, as salt passes them all).
  torch::optim::Optimizer* owner(std::size_t i) const { return owners_[i]; }

  // Lightning's StochasticWeightAveraging swaps the one-cycle schedule for its own
  // (SWALR, stepped per epoch): from then on every step uses `lr` (times each
  // group's muP factor) and `beta1`, the momentum the schedule had reached. The
  // schedule's position still counts the steps.
  void override_schedule(double lr, double beta1);
  bool schedule_overridden() const { return override_.has_value(); }

  // OneCycleLR's last_epoch: the schedule step the next optimizer step uses.
  int64_t schedule_index() const { return steps_done_ + offset_; }
  // Moves the schedule so that the next step uses step `index` (resuming a saved
  // position, or salt's last_epoch restart).
  void set_schedule_index(int64_t index) {
    offset_ = index - steps_done_;
    if (schedule_index() <= schedule_.total_steps()) apply_schedule();
  }

 private:
  void apply_schedule();
  void make_hybrid(const LrsConfig& lrs);

  OptimizerKind kind_;
  std::vector<torch::Tensor> parameters_;
  std::vector<std::string> names_;
  OneCycleSchedule schedule_;
  double weight_decay_;
  std::vector<std::unique_ptr<torch::optim::Optimizer>> optimizers_;
  std::vector<torch::optim::Optimizer*> owners_;
  int64_t steps_done_ = 0;
  int64_t offset_ = 0;  // lrs_config.last_epoch + 1
  std::vector<double> group_lr_scales_;
  std::optional<std::pair<double, double>> override_;  // lr, beta1 (override_schedule)
  void set_group_values(double lr, double beta1);
  void make_mup_adamw(const LrsConfig& lrs, const std::map<std::string, double>& width_mults);
};

}  // namespace salt::training
