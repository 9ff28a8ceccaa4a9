#include "training/optimization.h"

namespace salt::training {

Optimization::Optimization(std::vector<torch::Tensor> parameters, const LrsConfig& lrs, int64_t total_steps,
                           int64_t steps_done)
    : parameters_(std::move(parameters)),
      schedule_(lrs, total_steps),
      steps_done_(steps_done),
      offset_(lrs.last_epoch + 1) {
  auto options = torch::optim::AdamWOptions(lrs.initial).weight_decay(lrs.weight_decay);
  adamw_ = std::make_unique<torch::optim::AdamW>(parameters_, options);
  apply_schedule();
}

void Optimization::zero_grad() { adamw_->zero_grad(); }

void Optimization::apply_schedule() {
  auto index = schedule_index();
  double lr = schedule_.lr(index);
  double beta1 = schedule_.beta1(index);
  for (auto& group : adamw_->param_groups()) {
    auto& options = static_cast<torch::optim::AdamWOptions&>(group.options());
    options.lr(lr);
    options.betas(std::make_tuple(beta1, std::get<1>(options.betas())));
  }
}

void Optimization::step() {
  apply_schedule();
  adamw_->step();
  ++steps_done_;
  // torch's OneCycleLR raises one step past its total; salt-cpp checks it when the
  // next step asks for its values instead of after the last step.
  if (schedule_index() <= schedule_.total_steps()) apply_schedule();
}

double Optimization::current_lr() const { return schedule_.lr(std::min(schedule_index(), schedule_.total_steps())); }
double Optimization::current_beta1() const {
  return schedule_.beta1(std::min(schedule_index(), schedule_.total_steps()));
}

}  // namespace salt::training
