// lightning.pytorch.callbacks.TQDMProgressBar: the training and validation
// progress line (see training/outputs/progress.h) on rank 0. Lightning adds one with
// refresh_rate 1 when the config has none and enable_progress_bar is not false.
#include <cmath>
#include <cstdio>
#include <map>

#include "training/callback_registry.h"
#include "core/errors.h"
#include "models/packing/host_read.h"
#include "training/outputs/progress.h"

namespace salt::callbacks {
namespace {

const char* kRich = "lightning.pytorch.callbacks.RichProgressBar";

const char* kTqdm = "lightning.pytorch.callbacks.TQDMProgressBar";

// How many callbacks in trainer.callbacks are `class_path` (or one of its aliases).
int count_configured(const training::TrainerConfig& t, const std::string& class_path) {
  int n = 0;
  for (const auto& node : t.callbacks)
    if (const auto* spec = config::components().find(node.class_path); spec && spec->class_path == class_path) ++n;
  return n;
}
bool configures(const training::TrainerConfig& t, const std::string& class_path) {
  return count_configured(t, class_path) > 0;
}

struct ProgressBarOptions {
  int64_t refresh_rate = 1;
  int64_t process_position = 0;
  bool leave = false;  // Lightning >= 2.5
};

const config::Binding<ProgressBarOptions>& progress_bar_binding() {
  static const auto b = config::Binding<ProgressBarOptions>({})
                            .arg("refresh_rate", SALT_FIELD(refresh_rate), "Update the progress bar every N steps.")
                            .arg("process_position", SALT_FIELD(process_position), "Terminal line of the bar.")
                            .ignored("salt-cpp draws one bar, on rank 0")
                            .arg("leave", SALT_FIELD(leave), "Keep each epoch's bar.")
                            .ignored("every epoch's line is kept");
  return b;
}

class ProgressBar : public Callback {
 public:
  explicit ProgressBar(ProgressBarOptions o) : o_(o) {}

  // Lightning supports one progress bar (salt's base.yaml already lists TQDMProgressBar).
  void on_setup(FitState& s) override {
    const auto& t = s.setup->run.trainer;
    if (count_configured(t, kTqdm) + count_configured(t, kRich) > 1)
      throw UsageError("trainer.callbacks has " + std::to_string(count_configured(t, kTqdm) + count_configured(t, kRich)) +
                       " progress bars (TQDMProgressBar, RichProgressBar); Lightning supports one: configs/base.yaml "
                       "lists TQDMProgressBar, so set --trainer.callbacks in full rather than appending a second");
  }

  void on_fit_start(FitState& s) override {
    progress_ = std::make_unique<training::Progress>(s.setup->run.trainer.enable_progress_bar && s.process.main_rank,
                                                     static_cast<int>(o_.refresh_rate));
  }
  void on_epoch_start(FitState& s, const std::string& stage, int64_t batches) override {
    sums_[stage] = {};
    progress_->start(stage, s.epoch, s.max_epochs(), batches);
    progress_->set_run_left(training::run_left(s.schedule(), stage == "val", s.epoch, s.global_step));
  }
  // The stage's jet-weighted loss sum stays on the device; the bar reads it only
  // when it draws (every refresh_rate batches), not at every batch.
  void on_batch_end(FitState&, const std::string& stage, int64_t batch, const torch::Tensor& loss, int64_t jets) override {
    auto& sum = sums_[stage];
    auto weighted = loss.detach().to(torch::kDouble) * static_cast<double>(jets);
    sum.loss = sum.loss.defined() ? sum.loss + weighted : weighted;
    sum.jets += static_cast<double>(jets);
    progress_->update(batch, jets, [this, stage] { return mean_loss(stage); });
  }
  double mean_loss(const std::string& stage) const {
    const auto it = sums_.find(stage);
    return it != sums_.end() && it->second.loss.defined() ? host_read<double>(it->second.loss) / it->second.jets : NAN;
  }
  // Training: the epoch's mean loss (jet-weighted, this process). Validation: fit's
  // summary of the logged metrics, which the bar's mean loss equals on one process.
  void on_epoch_end(FitState& s, const std::string& stage, const std::string& summary) override {
    if (stage != "train") {
      progress_->finish(summary);
      // A validation within the epoch (val_check_interval): the training line goes on.
      if (s.batch_in_epoch >= 0) progress_->start("train", s.epoch, s.max_epochs(), s.train_batches());
      return;
    }
    char mean[64];
    std::snprintf(mean, sizeof mean, "mean train loss %.4f, ", mean_loss("train"));
    progress_->finish(mean + summary);
  }

 private:
  struct Sum {
    torch::Tensor loss;  // jet-weighted, float64, on the model's device
    double jets = 0;
  };
  ProgressBarOptions o_;
  std::unique_ptr<training::Progress> progress_;
  std::map<std::string, Sum> sums_;  // by stage: a validation within the epoch keeps the epoch's training sum
};

const bool kProgressBarRegistered = register_callback(
    {{kTqdm, "callback", progress_bar_binding().type(),
      "Progress bar on a terminal; plain lines otherwise.", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.TQDMProgressBar"}},
     [](const YAML::Node& args) { return std::make_unique<ProgressBar>(progress_bar_binding().read(args)); },
     [](const training::TrainerConfig& t) { return t.enable_progress_bar && !configures(t, kRich); }});

// lightning.pytorch.callbacks.RichProgressBar: the same progress line (salt-cpp
// draws no rich widgets); Lightning then adds no TQDMProgressBar.
struct RichOptions {
  int64_t refresh_rate = 1;
  bool leave = false;
  YAML::Node theme, console_kwargs;
};

const config::Binding<RichOptions>& rich_binding() {
  static const auto b = config::Binding<RichOptions>({})
                            .arg("refresh_rate", SALT_FIELD(refresh_rate), "Update the progress line every N steps.")
                            .arg("leave", SALT_FIELD(leave), "Keep each epoch's line.")
                            .ignored("every epoch's line is kept")
                            .arg("theme", SALT_FIELD(theme), "rich's colours.", config::t_any())
                            .ignored("salt-cpp draws a plain line")
                            .arg("console_kwargs", SALT_FIELD(console_kwargs), "rich Console options.", config::t_any())
                            .ignored("salt-cpp draws a plain line");
  return b;
}

const bool kRichRegistered = register_callback(
    {{kRich, "callback", rich_binding().type(), "Progress bar (drawn as TQDMProgressBar's line).",
      config::Support::kFull, "", {"pytorch_lightning.callbacks.RichProgressBar"}},
     [](const YAML::Node& args) {
       const auto o = rich_binding().read(args);
       ProgressBarOptions p;
       p.refresh_rate = o.refresh_rate;
       return std::make_unique<ProgressBar>(p);
     }});

}  // namespace
}  // namespace salt::callbacks
