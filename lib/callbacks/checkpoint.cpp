// salt.callbacks.Checkpoint: after every validation (at the train epoch's end), the full training state into
// <run>/ckpts/epoch=NNN-<fname_string>=<monitored value>.ckpt (rank 0; not under
// fast_dev_run or enable_checkpointing: false).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "callbacks/checkpoint_writer.h"
#include "callbacks/monitor.h"
#include "training/callback_registry.h"
#include "core/errors.h"
#include "core/path_join.h"

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
  char epoch_part[32], value_part[400];  // %.5f of the largest double: 309 digits and 6 more
  std::snprintf(epoch_part, sizeof epoch_part, "epoch=%03lld-", static_cast<long long>(epoch));
  std::snprintf(value_part, sizeof value_part, "=%.5f.ckpt", value);
  return epoch_part + fname_string + value_part;
}

// fname_string is part of a file name in <run>/ckpts (salt hands it to
// Lightning's ModelCheckpoint as part of the filename): it may make folders there,
// but must not leave the folder, nor make a name no file system takes.
void check_fname_string(const std::string& fname_string) {
  const auto name = checkpoint_name(0, fname_string, 0.0);
  const std::string where = "salt.callbacks.Checkpoint 'fname_string' '" + shown_in_message(fname_string, 120) + "'";
  if (!stays_below(name)) throw UsageError(where + " must stay inside <run>/ckpts (not an absolute path, no '..')");
  for (const auto& part : std::filesystem::path(name))
    if (part.string().size() > 255) throw UsageError(where + " makes a file name longer than 255 bytes");
}

class Checkpoint : public Callback {
 public:
  explicit Checkpoint(CheckpointOptions o) : o_(std::move(o)) { check_fname_string(o_.fname_string); }

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
    if (s.dev_run || !s.process.main_rank || !s.setup->run.trainer.enable_checkpointing) return;
    const auto path = s.run_dir / "ckpts" / checkpoint_name(s.epoch, o_.fname_string, monitored(s));
    write_checkpoint(s, path);
    s.actions.checkpoint_saved(path);
  }

  double monitored(const FitState& s) const {
    auto it = s.metrics.val.find(o_.monitor_loss);
    return it == s.metrics.val.end() ? 0.0 : it->second;
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
