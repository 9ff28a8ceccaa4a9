// lightning.pytorch.callbacks.OnExceptionCheckpoint: when training fails (an
// error, a non-finite loss, another rank's failure, SIGINT/SIGTERM) the run's
// state at its last optimizer step goes to dirpath/filename.ckpt before the error
// is reported, and `salt fit --ckpt_path` resumes it; a run that then finishes
// removes the file, as Lightning's teardown does. SIGKILL (and the out-of-memory
// killer) leaves no chance to write anything: periodic checkpoints cover those.
#include <spdlog/spdlog.h>

#include "callbacks/checkpoint_writer.h"
#include "core/errors.h"
#include "training/callback_registry.h"

namespace salt::callbacks {
namespace {
namespace fs = std::filesystem;

struct OnExceptionCheckpointOptions {
  std::string dirpath;
  std::string filename = "on_exception";
};

const config::Binding<OnExceptionCheckpointOptions>& on_exception_binding() {
  using namespace config;
  static const auto b =
      Binding<OnExceptionCheckpointOptions>({})
          .required("dirpath", SALT_FIELD(dirpath), "Folder of the checkpoint written when training fails.", t_path())
          .arg("filename", SALT_FIELD(filename), "Its name without '.ckpt'.");
  return b;
}

class OnExceptionCheckpoint : public Callback {
 public:
  explicit OnExceptionCheckpoint(OnExceptionCheckpointOptions o) : o_(std::move(o)) {
    if (o_.filename.empty()) throw UsageError("OnExceptionCheckpoint: the filename cannot be empty");
  }

  bool saves_checkpoints() const override { return true; }

  void on_exception(FitState& s, const std::string& error) override {
    if (s.global_step == 0 || !s.process.main_rank) return;  // nothing trained yet; rank 0 writes
    write_checkpoint(s, path());
    s.actions.checkpoint_saved(path());
    spdlog::info("OnExceptionCheckpoint: saved {} at step {} after: {}", path().string(), s.global_step, error);
  }

  void on_fit_end(FitState& s) override {  // Lightning's teardown: the run finished
    if (!s.process.main_rank || s.dev_run) return;
    std::error_code ec;
    fs::remove(path(), ec);
  }

 private:
  fs::path path() const { return fs::path(o_.dirpath) / (o_.filename + ".ckpt"); }
  OnExceptionCheckpointOptions o_;
};

const bool kOnExceptionCheckpointRegistered = register_callback(
    {{"lightning.pytorch.callbacks.OnExceptionCheckpoint", "callback", on_exception_binding().type(),
      "Saves a resumable checkpoint when training fails.", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.OnExceptionCheckpoint",
       "lightning.pytorch.callbacks.on_exception_checkpoint.OnExceptionCheckpoint"}},
     [](const YAML::Node& args) {
       return std::make_unique<OnExceptionCheckpoint>(on_exception_binding().read(args));
     }});

}  // namespace
}  // namespace salt::callbacks
