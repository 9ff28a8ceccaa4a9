// salt.callbacks.Checkpoint: after every validation (at the train epoch's end), the full training state into
// <run>/ckpts/epoch=NNN-<fname_string>=<monitored value>.ckpt (rank 0; not under
// fast_dev_run or enable_checkpointing: false).
#include <algorithm>
#include <cstdio>
#include <utility>

#include "callbacks/checkpoint_writer.h"
#include "callbacks/monitor.h"
#include "training/callback_registry.h"
#include "core/errors.h"

#include <spdlog/spdlog.h>

namespace salt::callbacks {
namespace {

struct CheckpointOptions {
  std::string monitor_loss;
  std::string fname_string = "val_loss";
};

const config::Binding<CheckpointOptions>& checkpoint_binding() {
  static const auto b = config::Binding<CheckpointOptions>({})
                            .required("monitor_loss", SALT_FIELD(monitor_loss),
                                      "Metric in checkpoint names, e.g. val/jets_classification_loss.")
                            .arg("fname_string", SALT_FIELD(fname_string),
                                 "Its name in the file: epoch=NNN-<fname_string>=X.XXXXX.ckpt.");
  return b;
}

std::string checkpoint_name(int64_t epoch, const std::string& fname_string, double value) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "epoch=%03lld-%s=%.5f.ckpt", static_cast<long long>(epoch), fname_string.c_str(), value);
  return buf;
}

class Checkpoint : public Callback {
 public:
  explicit Checkpoint(CheckpointOptions o) : o_(std::move(o)) {}

  // Lightning formats a metric it has not logged as 0 (salt's nan_regression.yaml
  // relies on that), so an unknown monitor_loss is a warning, not an error.
  void on_setup(FitState& s) override {
    const auto& t = s.setup->run.trainer;
    at_epoch_end_ = t.check_val_every_n_epoch == 1 && validates_once_per_epoch(t);
    std::vector<std::string> known{"val/loss"};
    for (const auto& task : s.setup->model->model->task_list()) known.push_back("val/" + task->name() + "_loss");
    if (std::find(known.begin(), known.end(), o_.monitor_loss) != known.end()) return;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    spdlog::warn("salt.callbacks.Checkpoint monitor_loss '{}' is not a logged metric ({}): checkpoint names "
                 "carry 0 in its place, as Lightning writes them",
                 o_.monitor_loss, list);
  }

  bool saves_checkpoints() const override { return true; }

  // salt's Checkpoint is a ModelCheckpoint: with one validation per epoch it saves
  // at the train epoch's end, after the other callbacks (EarlyStopping) have seen
  // that validation, so their state in the file is current; else after each validation.
  void on_validation_end(FitState& s) override {
    if (at_epoch_end_ && s.batch_in_epoch < 0) validated_ = true;
    else save(s);
  }
  void on_train_epoch_end(FitState& s) override {
    if (std::exchange(validated_, false)) save(s);
  }

 private:
  void save(FitState& s) {
    if (s.dev_run || !s.main_rank || !s.setup->run.trainer.enable_checkpointing) return;
    const auto path = s.run_dir / "ckpts" / checkpoint_name(s.epoch, o_.fname_string, monitored(s));
    write_checkpoint(s, path);
    s.checkpoint_saved(path);
  }

  double monitored(const FitState& s) const {
    auto it = s.val_metrics.find(o_.monitor_loss);
    return it == s.val_metrics.end() ? 0.0 : it->second;
  }

  CheckpointOptions o_;
  bool at_epoch_end_ = true;
  bool validated_ = false;  // the epoch's validation ran; save at its end
};

const bool kCheckpointRegistered = register_callback(
    {{"salt.callbacks.Checkpoint", "callback", checkpoint_binding().type(), "Checkpoint after every validation into <run>/ckpts."},
     [](const YAML::Node& args) { return std::make_unique<Checkpoint>(checkpoint_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
