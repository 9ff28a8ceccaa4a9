// lightning.pytorch.callbacks.Timer (and trainer.max_time, which adds one):
// stops training once it has run for `duration`, checked after every training
// batch (interval: step) or epoch (interval: epoch). The time trained so far is
// saved in checkpoints, so a resumed run counts on from it (and stops at once if
// its time is already spent), as Lightning's.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <optional>

#include "callbacks/monitor.h"
#include "training/callback_registry.h"

namespace salt::callbacks {
namespace {

struct TimerOptions {
  std::optional<double> duration_seconds;
  std::string interval = "step";
  bool verbose = true;
};

const config::Binding<TimerOptions>& timer_binding() {
  using namespace config;
  static const auto b =
      Binding<TimerOptions>({})
          .custom(field_null("duration", t_optional(t_union({t_str(), t_dict(t_float())})),
                             "How long to train: 'DD:HH:MM:SS' or {hours: 2, minutes: 30} (null: no limit)."),
                  [](TimerOptions& o, const YAML::Node& n) {
                    if (n.IsDefined() && !n.IsNull()) o.duration_seconds = duration_seconds(n, "Timer.duration");
                  })
          .arg("interval", SALT_FIELD(interval), "Check after every training step or epoch.",
               t_choice({"step", "epoch"}))
          .arg("verbose", SALT_FIELD(verbose), "Say when the time is up.");
  return b;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Python's str(timedelta(seconds=int(s))): 0:00:05, 1 day, 2:03:04.
std::string timedelta_text(double seconds) {
  auto s = static_cast<int64_t>(seconds);
  const int64_t days = s / 86400;
  s %= 86400;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  if (days == 0) return buf;
  return std::to_string(days) + (days == 1 ? " day, " : " days, ") + buf;
}

class Timer : public Callback {
 public:
  explicit Timer(TimerOptions o) : o_(std::move(o)) {}

  std::string state_key() const override { return "Timer"; }

  serialize::PyValue state_dict() const override {
    using serialize::PyValue;
    auto elapsed = PyValue::dict();
    const std::pair<const char*, double> stages[] = {
        {"train", train_elapsed()}, {"sanity_check", 0.0}, {"validate", validate_elapsed()}, {"test", 0.0}, {"predict", 0.0}};
    for (const auto& [stage, seconds] : stages) elapsed.set_item(PyValue::str(stage), PyValue::real(seconds));
    auto d = PyValue::dict();
    d.set_item(PyValue::str("time_elapsed"), elapsed);
    return d;
  }

  void load_state_dict(FitState&, const serialize::PyValue& d) override {
    if (const auto* elapsed = d.find("time_elapsed"); elapsed && elapsed->is_mapping())
      if (const auto* train = elapsed->find("train"); train && train->is_number()) offset_ = train->as_number();
  }

  // After the state is restored: a resumed run whose time is spent stops before training.
  void on_fit_start(FitState& s) override {
    if (o_.duration_seconds) check(s);
    train_start_ = now();
  }
  void on_batch_end(FitState& s, const std::string& stage, int64_t, const torch::Tensor&, int64_t) override {
    if (stage == "train" && o_.interval == "step" && o_.duration_seconds) check(s);
  }
  void on_train_epoch_end(FitState& s) override {
    if (o_.interval == "epoch" && o_.duration_seconds) check(s);
  }
  void on_epoch_start(FitState&, const std::string& stage, int64_t) override {
    if (stage != "val") return;
    validate_start_ = now();
    validate_end_.reset();
  }
  void on_epoch_end(FitState&, const std::string& stage, const std::string&) override {
    if (stage == "val") validate_end_ = now();
  }
  void on_fit_end(FitState&) override { train_end_ = now(); }

 private:
  double train_elapsed() const {
    if (!train_start_) return offset_;
    return (train_end_ ? *train_end_ : now()) - *train_start_ + offset_;
  }
  double validate_elapsed() const {
    if (!validate_start_) return 0;
    return (validate_end_ ? *validate_end_ : now()) - *validate_start_;
  }

  void check(FitState& s) {
    bool up = train_elapsed() >= *o_.duration_seconds;
    up = s.actions.sum_over_ranks({up ? 1.0 : 0.0})[0] > 0;  // every rank stops at the same step
    if (!up || s.should_stop) {
      s.should_stop = s.should_stop || up;
      return;
    }
    s.should_stop = true;
    if (o_.verbose) spdlog::info("Time limit reached. Elapsed time is {}. Signaling Trainer to stop.", timedelta_text(train_elapsed()));
  }

  TimerOptions o_;
  double offset_ = 0;  // training time of the runs this one resumes
  std::optional<double> train_start_, train_end_, validate_start_, validate_end_;
};

const bool kTimerRegistered = register_callback(
    {{"lightning.pytorch.callbacks.Timer", "callback", timer_binding().type(),
      "Stops training after a set time (trainer.max_time adds one).", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.Timer", "lightning.pytorch.callbacks.timer.Timer"}},
     [](const YAML::Node& args) { return std::make_unique<Timer>(timer_binding().read(args)); },
     [](const training::TrainerConfig& t) { return t.max_time_seconds.has_value(); },
     [](const training::TrainerConfig& t) {
       YAML::Node args(YAML::NodeType::Map);
       args["duration"]["seconds"] = *t.max_time_seconds;
       return args;
     }});

}  // namespace
}  // namespace salt::callbacks
