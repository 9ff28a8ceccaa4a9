// salt.callbacks.Checkpoint: after every validation, the full training state into
// <run>/ckpts/epoch=NNN-<fname_string>=<monitored value>.ckpt (rank 0; not under
// fast_dev_run or enable_checkpointing: false).
#include <algorithm>
#include <cstdio>

#include "callbacks/registry.h"
#include "core/errors.h"

namespace salt::callbacks {
namespace {

struct CheckpointOptions {
  std::string monitor_loss;
  std::string fname_string = "val_loss";
};

const config::Binding<CheckpointOptions>& binding() {
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

  // The monitored metric must be one the fit logs: val/loss or val/<task>_loss.
  void on_setup(FitState& s) override {
    std::vector<std::string> known{"val/loss"};
    for (const auto& task : s.setup->model->model->task_list()) known.push_back("val/" + task->name() + "_loss");
    if (std::find(known.begin(), known.end(), o_.monitor_loss) != known.end()) return;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw UsageError("salt.callbacks.Checkpoint monitor_loss '" + o_.monitor_loss + "' is not a logged metric (" + list + ")");
  }

  void on_validation_end(FitState& s) override {
    if (s.dev_run || !s.main_rank || !s.setup->trainer.enable_checkpointing) return;
    auto state = s.capture();
    for (const auto& [k, v] : s.val_metrics) state.metrics.emplace_back(k, v);
    auto path = s.run_dir / "ckpts" / checkpoint_name(s.epoch, o_.fname_string, s.val_metrics.at(o_.monitor_loss));
    std::filesystem::create_directories(path.parent_path());
    training::save_checkpoint(path, state, s.optimization);
    s.checkpoint_saved(path);
  }

 private:
  CheckpointOptions o_;
};

const bool kRegistered = register_callback(
    {{"salt.callbacks.Checkpoint", "callback", binding().type(), "Checkpoint after every validation into <run>/ckpts."},
     [](const YAML::Node& args) { return std::make_unique<Checkpoint>(binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
