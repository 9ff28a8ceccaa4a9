// lightning.pytorch.callbacks.EarlyStopping: stops the run when a monitored
// metric has not improved by min_delta for `patience` checks, passes
// stopping_threshold, crosses divergence_threshold or is not finite, with
// Lightning's rules and its state in checkpoints (wait_count, best_score, ...),
// so a resumed run goes on counting. Checked after each validation (Lightning
// checks at the train epoch's end, after its validation, by default: the same
// point), or only at the train epoch's end with check_on_train_epoch_end: true.
#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <limits>
#include <optional>

#include "callbacks/monitor.h"
#include "training/callback_registry.h"
#include "core/errors.h"

namespace salt::callbacks {
namespace {

struct EarlyStoppingOptions {
  std::string monitor;
  double min_delta = 0.0;
  int64_t patience = 3;
  bool verbose = false;
  std::string mode = "min";
  bool strict = true;
  bool check_finite = true;
  std::optional<double> stopping_threshold, divergence_threshold;
  std::optional<bool> check_on_train_epoch_end;
  bool log_rank_zero_only = false;
};

const config::Binding<EarlyStoppingOptions>& early_stopping_binding() {
  using config::t_optional;
  static const auto b =
      config::Binding<EarlyStoppingOptions>({})
          .required("monitor", SALT_FIELD(monitor), "Metric to watch, e.g. val/loss.")
          .arg("min_delta", SALT_FIELD(min_delta), "Smallest change that counts as an improvement.",
               config::at_least(config::t_float(), 0))
          .arg("patience", SALT_FIELD(patience), "Checks without improvement before stopping.",
               config::at_least(config::t_int(), 0))
          .arg("verbose", SALT_FIELD(verbose), "Log every improvement, not only the stop.")
          .arg("mode", SALT_FIELD(mode), "min: lower is better; max: higher is better.", config::t_choice({"min", "max"}))
          .arg("strict", SALT_FIELD(strict), "A monitor that is not logged is an error (false: skip the check).")
          .arg("check_finite", SALT_FIELD(check_finite), "Stop when the metric is NaN or infinite.")
          .arg("stopping_threshold", SALT_FIELD(stopping_threshold), "Stop once the metric is better than this.")
          .arg("divergence_threshold", SALT_FIELD(divergence_threshold), "Stop once the metric is worse than this.")
          .arg("check_on_train_epoch_end", SALT_FIELD(check_on_train_epoch_end),
               "Check at the train epoch's end instead of after each validation (null: Lightning's choice).")
          .arg("log_rank_zero_only", SALT_FIELD(log_rank_zero_only), "Log from rank 0 only (salt-cpp always does).");
  return b;
}

// Lightning's EarlyStoppingReason values, as saved in the state.
enum class Reason : int64_t { kNotStopped = 0, kStoppingThreshold = 1, kDivergence = 2, kPatience = 3, kNonFinite = 4 };

class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions o) : o_(std::move(o)), better_(o_.mode) {
    // Lightning keeps min_delta signed by mode and compares `current - min_delta` with the best.
    signed_min_delta_ = static_cast<float>(o_.mode == "max" ? o_.min_delta : -o_.min_delta);
    best_ = better_.worst();
  }

  std::string state_key() const override {
    return "EarlyStopping" + python_kwargs_repr({{"monitor", python_str_repr(o_.monitor)}, {"mode", python_str_repr(o_.mode)}});
  }

  serialize::PyValue state_dict() const override {
    using serialize::PyValue;
    auto d = PyValue::dict();
    d.set_item(PyValue::str("wait_count"), PyValue::integer(wait_count_));
    d.set_item(PyValue::str("stopped_epoch"), PyValue::integer(stopped_epoch_));
    d.set_item(PyValue::str("best_score"), PyValue::tensor(at::scalar_tensor(best_, at::kFloat)));
    d.set_item(PyValue::str("patience"), PyValue::integer(patience_));
    d.set_item(PyValue::str("stopping_reason"), PyValue::integer(static_cast<int64_t>(reason_)));
    d.set_item(PyValue::str("stopping_reason_message"), message_.empty() ? PyValue() : PyValue::str(message_));
    return d;
  }

  void load_state_dict(FitState&, const serialize::PyValue& d) override {
    wait_count_ = required_entry(d, "wait_count").as_int();
    stopped_epoch_ = required_entry(d, "stopped_epoch").as_int();
    best_ = static_cast<float>(score_of(required_entry(d, "best_score")));
    patience_ = required_entry(d, "patience").as_int();
    if (const auto* r = d.find("stopping_reason"); r && r->is_int()) reason_ = static_cast<Reason>(r->as_int());
    if (const auto* m = d.find("stopping_reason_message"); m && m->is_str()) message_ = m->as_str();
  }

  void on_setup(FitState& s) override {
    patience_ = o_.patience;
    // Lightning: after each validation when validation runs more or less often than once per epoch.
    const auto& t = s.setup->run.trainer;
    on_epoch_end_ = o_.check_on_train_epoch_end.value_or(t.check_val_every_n_epoch == 1 && validates_once_per_epoch(t));
  }

  void on_validation_end(FitState& s) override {
    if (!on_epoch_end_) check(s);
  }
  void on_train_epoch_end(FitState& s) override {
    if (on_epoch_end_) check(s);
  }

 private:
  void check(FitState& s) {
    if (s.dev_run) return;
    const auto metrics = monitor_candidates(s);
    const auto it = metrics.find(o_.monitor);
    if (it == metrics.end()) {
      const auto message = "EarlyStopping: monitor '" + o_.monitor + "' is not a logged metric (logged: " +
                           join_keys(metrics) + ")";
      if (o_.strict) throw UsageError(message + "; name one of them, or set strict: false to skip the check");
      if (o_.verbose) spdlog::warn("{}; skipping the check (strict: false)", message);
      return;
    }
    const float current = static_cast<float>(it->second);  // Lightning compares float32 tensors
    const bool stop = evaluate(current);
    if (stop) {
      s.should_stop = true;
      stopped_epoch_ = s.epoch;
      spdlog::info("{}", message_);
    }
  }

  // Lightning's _evaluate_stopping_criteria, in its order; sets reason_ and message_.
  bool evaluate(float current) {
    const auto name = o_.monitor;
    if (o_.check_finite && !std::isfinite(current)) {
      return stop_for(Reason::kNonFinite, "Monitored metric " + name + " = " + python_float_repr(current) +
                                              " is not finite. Previous best value was " + fixed(best_, 3) +
                                              ". Signaling Trainer to stop.");
    }
    if (o_.stopping_threshold && better_(current, static_cast<float>(*o_.stopping_threshold))) {
      return stop_for(Reason::kStoppingThreshold, "Stopping threshold reached: " + name + " = " +
                                                      python_float_repr(current) + " " + better_.order() + " " +
                                                      python_float_repr(*o_.stopping_threshold) +
                                                      ". Signaling Trainer to stop.");
    }
    if (o_.divergence_threshold && better_(-current, -static_cast<float>(*o_.divergence_threshold))) {
      return stop_for(Reason::kDivergence, "Divergence threshold reached: " + name + " = " + python_float_repr(current) +
                                               " " + better_.order() + " " +
                                               python_float_repr(*o_.divergence_threshold) +
                                               ". Signaling Trainer to stop.");
    }
    if (better_(current - signed_min_delta_, best_)) {
      if (o_.verbose) spdlog::info("{}", improvement_message(current));
      best_ = current;
      wait_count_ = 0;
      return false;
    }
    if (++wait_count_ < patience_) return false;
    return stop_for(Reason::kPatience, "Monitored metric " + name + " did not improve in the last " +
                                           std::to_string(wait_count_) + " records. Best score: " + fixed(best_, 3) +
                                           ". Signaling Trainer to stop.");
  }

  bool stop_for(Reason reason, std::string message) {
    reason_ = reason;
    message_ = std::move(message);
    return true;
  }

  std::string improvement_message(float current) const {
    if (!std::isfinite(best_)) return "Metric " + o_.monitor + " improved. New best score: " + fixed(current, 3);
    return "Metric " + o_.monitor + " improved by " + fixed(std::fabs(best_ - current), 3) +
           " >= min_delta = " + python_float_repr(std::fabs(o_.min_delta)) + ". New best score: " + fixed(current, 3);
  }

  EarlyStoppingOptions o_;
  MonitorMode better_;
  float signed_min_delta_ = 0;
  float best_;
  int64_t wait_count_ = 0, stopped_epoch_ = 0, patience_ = 3;
  Reason reason_ = Reason::kNotStopped;
  std::string message_;
  bool on_epoch_end_ = false;
};

const bool kEarlyStoppingRegistered = register_callback(
    {{"lightning.pytorch.callbacks.EarlyStopping", "callback", early_stopping_binding().type(),
      "Stops training when a monitored metric stops improving.", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.EarlyStopping", "lightning.pytorch.callbacks.early_stopping.EarlyStopping"}},
     [](const YAML::Node& args) { return std::make_unique<EarlyStopping>(early_stopping_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
