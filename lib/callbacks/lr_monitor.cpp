// lightning.pytorch.callbacks.LearningRateMonitor: the optimizer's learning rate
// (and, on request, beta1 as "momentum" and the weight decay) with the train
// metrics, under Lightning's names: lr-AdamW, lr-AdamW-momentum,
// lr-AdamW-weight_decay. With logging_interval: epoch only the first logged step
// of each epoch carries them.
#include <optional>

#include "training/callback_registry.h"

namespace salt::callbacks {
namespace {

struct LrMonitorOptions {
  std::optional<std::string> logging_interval;
  bool log_momentum = false;
  bool log_weight_decay = false;
};

const config::Binding<LrMonitorOptions>& lr_monitor_binding() {
  static const auto b =
      config::Binding<LrMonitorOptions>({})
          .arg("logging_interval", SALT_FIELD(logging_interval), "When to log the learning rate.",
               config::t_optional(config::t_choice({"step", "epoch"})))
          .arg("log_momentum", SALT_FIELD(log_momentum), "Also log the momentum.")
          .arg("log_weight_decay", SALT_FIELD(log_weight_decay), "Also log the weight decay.");
  return b;
}

class LrMonitor : public Callback {
 public:
  explicit LrMonitor(LrMonitorOptions o) : o_(std::move(o)) {}
  void add_step_metrics(FitState& s, Metrics& m) override {
    if (o_.logging_interval == std::optional<std::string>("epoch")) {
      if (s.epoch == last_epoch_) return;
      last_epoch_ = s.epoch;
    }
    const auto name = "lr-" + s.last_step.optimizer_name;
    m[name] = s.last_step.lr;
    if (o_.log_momentum) m[name + "-momentum"] = s.last_step.beta1;
    if (o_.log_weight_decay) m[name + "-weight_decay"] = s.last_step.weight_decay;
  }

 private:
  LrMonitorOptions o_;
  int64_t last_epoch_ = -1;
};

const bool kLrMonitorRegistered = register_callback(
    {{"lightning.pytorch.callbacks.LearningRateMonitor", "callback", lr_monitor_binding().type(),
      "Logs the learning rate to metrics.csv.", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.LearningRateMonitor"}},
     [](const YAML::Node& args) { return std::make_unique<LrMonitor>(lr_monitor_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
