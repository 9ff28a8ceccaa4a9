// lightning.pytorch.callbacks.TQDMProgressBar: the training and validation
// progress line (see training/progress.h) on rank 0. Lightning adds one with
// refresh_rate 1 when the config has none and enable_progress_bar is not false.
#include <cmath>
#include <cstdio>

#include "callbacks/registry.h"
#include "models/host_read.h"
#include "training/progress.h"

namespace salt::callbacks {
namespace {

struct ProgressBarOptions {
  int64_t refresh_rate = 1;
  int64_t process_position = 0;
};

const config::Binding<ProgressBarOptions>& binding() {
  static const auto b = config::Binding<ProgressBarOptions>({})
                            .arg("refresh_rate", SALT_FIELD(refresh_rate), "Update the progress bar every N steps.")
                            .arg("process_position", SALT_FIELD(process_position), "Terminal line of the bar.")
                            .ignored("salt-cpp draws one bar, on rank 0");
  return b;
}

class ProgressBar : public Callback {
 public:
  explicit ProgressBar(ProgressBarOptions o) : o_(o) {}

  void on_fit_start(FitState& s) override {
    progress_ = std::make_unique<training::Progress>(s.setup->trainer.enable_progress_bar && s.main_rank,
                                                     static_cast<int>(o_.refresh_rate));
  }
  void on_epoch_start(FitState& s, const std::string& stage, int64_t batches) override {
    loss_sum_ = torch::Tensor();
    jets_ = 0;
    progress_->start(stage, s.epoch, s.max_epochs, batches);
    progress_->set_run_left(training::run_left(s.schedule, stage == "val", s.epoch, s.global_step));
  }
  // The stage's jet-weighted loss sum stays on the device; the bar reads it only
  // when it draws (every refresh_rate batches), not at every batch.
  void on_batch_end(FitState&, const std::string&, int64_t batch, const torch::Tensor& loss, int64_t jets) override {
    auto weighted = loss.detach().to(torch::kDouble) * static_cast<double>(jets);
    loss_sum_ = loss_sum_.defined() ? loss_sum_ + weighted : weighted;
    jets_ += static_cast<double>(jets);
    progress_->update(batch, jets, [this] { return mean_loss(); });
  }
  double mean_loss() const { return loss_sum_.defined() ? host_read<double>(loss_sum_) / jets_ : NAN; }
  // Training: the epoch's mean loss (jet-weighted, this process). Validation: fit's
  // summary of the logged metrics, which the bar's mean loss equals on one process.
  void on_epoch_end(FitState&, const std::string& stage, const std::string& summary) override {
    if (stage != "train") return progress_->finish(summary);
    char mean[64];
    std::snprintf(mean, sizeof mean, "mean train loss %.4f, ", mean_loss());
    progress_->finish(mean + summary);
  }

 private:
  ProgressBarOptions o_;
  std::unique_ptr<training::Progress> progress_;
  torch::Tensor loss_sum_;  // float64, on the model's device
  double jets_ = 0;
};

const bool kRegistered = register_callback(
    {{"lightning.pytorch.callbacks.TQDMProgressBar", "callback", binding().type(),
      "Progress bar on a terminal; plain lines otherwise.", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.TQDMProgressBar"}},
     [](const YAML::Node& args) { return std::make_unique<ProgressBar>(binding().read(args)); },
     [](const training::TrainerConfig& t) { return t.enable_progress_bar; }});

}  // namespace
}  // namespace salt::callbacks
