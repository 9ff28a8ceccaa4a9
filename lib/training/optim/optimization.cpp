#include "training/optim/optimization.h"

#include "core/errors.h"
#include "training/optim/foreach_adamw.h"
#include "training/optim/lion.h"
#include "training/optim/muon.h"

namespace salt::training {

OptimizerKind optimizer_kind(const std::string& name) {
  if (name == "AdamW") return OptimizerKind::kAdamW;
  if (name == "lion") return OptimizerKind::kLion;
  if (name == "HybridMuonAdamW") return OptimizerKind::kHybridMuonAdamW;
  throw UsageError("model.optimizer: '" + name + "' is not supported (AdamW, lion, HybridMuonAdamW)");
}

Optimization::Optimization(const NamedParameters& parameters, OptimizerKind kind, const LrsConfig& lrs,
                           int64_t total_steps, int64_t steps_done, const std::map<std::string, double>& mup_width_mults)
    : kind_(kind),
      schedule_(lrs, total_steps),
      weight_decay_(lrs.weight_decay),
      steps_done_(steps_done),
      offset_(lrs.last_epoch + 1) {
  for (const auto& item : parameters) {
    names_.push_back(item.key());
    parameters_.push_back(item.value());
  }
  // salt: lr = lrs_config.initial (OneCycleLR overwrites it before the first step).
  if (!mup_width_mults.empty() && kind != OptimizerKind::kAdamW)
    throw UsageError("model.mup_config: muP needs model.optimizer AdamW (salt's MuAdamW), not " + class_name());
  if (!mup_width_mults.empty()) {
    make_mup_adamw(lrs, mup_width_mults);
  } else if (kind == OptimizerKind::kAdamW) {
    auto options = torch::optim::AdamWOptions(lrs.initial).weight_decay(lrs.weight_decay);
    optimizers_.push_back(std::make_unique<ForeachAdamW>(parameters_, options));
  } else if (kind == OptimizerKind::kLion) {
    optimizers_.push_back(std::make_unique<Lion>(parameters_, LionOptions(lrs.initial).weight_decay(lrs.weight_decay)));
  } else {
    make_hybrid(lrs);
  }
  if (kind != OptimizerKind::kHybridMuonAdamW) owners_.assign(parameters_.size(), optimizers_.front().get());
  // A resumed run past the schedule's end gets its position from set_schedule_index
  // (lrs_config.last_epoch); a step taken without one fails in apply_schedule.
  if (schedule_index() <= schedule_.total_steps()) apply_schedule();
}

// mup's MuAdamW: one group per width multiplier of the matrix-like parameters
// (lr / m, weight_decay * m), the rest in one group at the plain settings.
void Optimization::make_mup_adamw(const LrsConfig& lrs, const std::map<std::string, double>& width_mults) {
  std::map<double, std::vector<torch::Tensor>> matrix;
  std::vector<torch::Tensor> rest;
  std::size_t found = 0;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    auto it = width_mults.find(names_[i]);
    if (it == width_mults.end()) {
      rest.push_back(parameters_[i]);
    } else {
      matrix[it->second].push_back(parameters_[i]);
      ++found;
    }
  }
  if (found != width_mults.size()) throw UsageError("muP: a parameter with width dimensions is not among the model's");
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (auto& [m, params] : matrix) {
    groups.emplace_back(params, std::make_unique<torch::optim::AdamWOptions>(
                                    torch::optim::AdamWOptions(lrs.initial / m).weight_decay(lrs.weight_decay * m)));
    group_lr_scales_.push_back(1.0 / m);
  }
  groups.emplace_back(rest, std::make_unique<torch::optim::AdamWOptions>(
                                torch::optim::AdamWOptions(lrs.initial).weight_decay(lrs.weight_decay)));
  group_lr_scales_.push_back(1.0);
  optimizers_.push_back(std::make_unique<ForeachAdamW>(
      groups, torch::optim::AdamWOptions(lrs.initial).weight_decay(lrs.weight_decay)));
}

// salt's HybridMuonAdamW: frozen parameters go nowhere, the policy splits the rest.
void Optimization::make_hybrid(const LrsConfig& lrs) {
  std::vector<torch::Tensor> muon, adamw;
  std::vector<int> side(parameters_.size(), -1);  // 0 Muon, 1 AdamW
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!parameters_[i].requires_grad()) continue;
    side[i] = is_muon_param(names_[i], parameters_[i]) ? 0 : 1;
    (side[i] == 0 ? muon : adamw).push_back(parameters_[i]);
  }
  if (muon.empty())
    throw UsageError("model.optimizer HybridMuonAdamW: no parameters selected for Muon (no 2-D weight outside "
                     "biases, norms, embeddings and heads)");
  if (adamw.empty()) throw UsageError("model.optimizer HybridMuonAdamW: no parameters selected for AdamW");
  optimizers_.push_back(std::make_unique<Muon>(muon, MuonOptions(lrs.initial).weight_decay(lrs.weight_decay)));
  auto adamw_options = torch::optim::AdamWOptions(lrs.initial).weight_decay(lrs.weight_decay);
  optimizers_.push_back(std::make_unique<ForeachAdamW>(adamw, adamw_options));
  for (int s : side) owners_.push_back(s < 0 ? nullptr : optimizers_[static_cast<std::size_t>(s)].get());
}

std::string Optimization::class_name() const {
  switch (kind_) {
    case OptimizerKind::kLion: return "Lion";
    case OptimizerKind::kHybridMuonAdamW: return "HybridMuonAdamW";
    default: return "AdamW";
  }
}

void Optimization::zero_grad() {
  for (auto& optimizer : optimizers_) optimizer->zero_grad();
}

void Optimization::apply_schedule() {
  if (override_) return set_group_values(override_->first, override_->second);
  auto index = schedule_index();
  set_group_values(schedule_.lr(index), schedule_.beta1(index));
}

void Optimization::override_schedule(double lr, double beta1) {
  override_ = std::make_pair(lr, beta1);
  apply_schedule();
}

void Optimization::set_group_values(double lr, double beta1) {
  for (auto& optimizer : optimizers_)
    for (std::size_t g = 0; g < optimizer->param_groups().size(); ++g) {
      auto& group = optimizer->param_groups()[g];
      group.options().set_lr(lr * (g < group_lr_scales_.size() ? group_lr_scales_[g] : 1.0));
      // OneCycleLR cycles betas[0] only when salt lets it (not HybridMuonAdamW).
      if (kind_ == OptimizerKind::kAdamW) {
        auto& options = static_cast<torch::optim::AdamWOptions&>(group.options());
        options.betas(std::make_tuple(beta1, std::get<1>(options.betas())));
      } else if (kind_ == OptimizerKind::kLion) {
        auto& options = static_cast<LionOptions&>(group.options());
        options.betas(std::make_tuple(beta1, std::get<1>(options.betas())));
      }
    }
}

void Optimization::step(bool update_parameters) {
  apply_schedule();
  if (update_parameters)
    for (auto& optimizer : optimizers_) optimizer->step();
  ++steps_done_;
  // torch's OneCycleLR raises one step past its total; salt-cpp checks it when the
  // next step asks for its values instead of after the last step.
  if (override_ || schedule_index() <= schedule_.total_steps()) apply_schedule();
}

double Optimization::current_lr() const { return override_ ? override_->first : schedule_lr_at(schedule_index()); }
double Optimization::current_beta1() const {
  if (kind_ == OptimizerKind::kHybridMuonAdamW) return 0.0;
  return override_ ? override_->second : schedule_beta1_at(schedule_index());
}
double Optimization::schedule_lr_at(int64_t index) const {
  return schedule_.lr(std::min(index, schedule_.total_steps()));
}
double Optimization::schedule_beta1_at(int64_t index) const {
  if (kind_ == OptimizerKind::kHybridMuonAdamW) return 0.0;
  return schedule_.beta1(std::min(index, schedule_.total_steps()));
}

}  // namespace salt::training
