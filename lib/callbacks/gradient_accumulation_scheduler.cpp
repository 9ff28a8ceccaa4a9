// lightning.pytorch.callbacks.GradientAccumulationScheduler: the number of
// batches accumulated per optimizer step changes by epoch ({0: 1, 4: 2, 8: 4}:
// from epoch 4 two batches per step, from 8 four). Epochs before the first key
// accumulate 1, as Lightning adds {0: 1}. As in Lightning, trainer.
// accumulate_grad_batches must stay 1 with it, and the learning-rate schedule is
// planned at one batch per step (Lightning's estimated_stepping_batches is taken
// before the callback first acts).
#include <map>

#include "training/callback_registry.h"
#include "core/errors.h"

namespace salt::callbacks {
namespace {

struct SchedulerOptions {
  std::map<int64_t, int64_t> scheduling;
};

const config::Binding<SchedulerOptions>& gradient_accumulation_scheduler_binding() {
  static const auto b = config::Binding<SchedulerOptions>({}).required(
      "scheduling", SALT_FIELD(scheduling), "Epoch (from 0) -> batches per optimizer step from that epoch on.",
      config::t_dict(config::at_least(config::t_int(), 1), config::at_least(config::t_int(), 0)));
  return b;
}

class GradientAccumulationScheduler : public Callback {
 public:
  explicit GradientAccumulationScheduler(SchedulerOptions o) : scheduling_(std::move(o.scheduling)) {
    if (scheduling_.empty()) throw UsageError("GradientAccumulationScheduler: scheduling is empty");
    scheduling_.emplace(0, 1);  // keeps a given epoch-0 factor
  }

  void on_setup(FitState& s) override {
    if (s.setup->run.trainer.accumulate_grad_batches != 1)
      throw UsageError("trainer.accumulate_grad_batches is " +
                       std::to_string(s.setup->run.trainer.accumulate_grad_batches) +
                       " and trainer.callbacks has a GradientAccumulationScheduler; remove one of them");
  }

  void on_epoch_start(FitState& s, const std::string& stage, int64_t) override {
    if (stage == "train") s.accumulate_grad_batches = factor(s.epoch);
  }

 private:
  int64_t factor(int64_t epoch) const { return std::prev(scheduling_.upper_bound(epoch))->second; }

  std::map<int64_t, int64_t> scheduling_;
};

const bool kGradientAccumulationSchedulerRegistered = register_callback(
    {{"lightning.pytorch.callbacks.GradientAccumulationScheduler", "callback", gradient_accumulation_scheduler_binding().type(),
      "Changes accumulate_grad_batches by epoch.", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.GradientAccumulationScheduler"}},
     [](const YAML::Node& args) { return std::make_unique<GradientAccumulationScheduler>(gradient_accumulation_scheduler_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
