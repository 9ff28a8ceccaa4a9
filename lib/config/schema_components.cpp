// The callbacks and loggers a salt config can name by class_path, with their
// init_args (as Lightning and salt/callbacks/*.py define them). Model components
// register themselves in lib/models/, next to their modules.
#include "config/schema.h"

namespace salt::config {
namespace {

TypeP open_args() { return t_dict(t_any()); }

void add_callbacks(ComponentRegistry& r) {
  r.add({"salt.callbacks.Checkpoint", "callback",
         t_struct({
             required("monitor_loss", t_str(), "Metric in checkpoint names, e.g. val/jets_classification_loss."),
             field("fname_string", t_str(), "val_loss", "Its name in the file: epoch=NNN-<fname_string>=X.XXXXX.ckpt."),
         }),
         "Checkpoint after every validation into <run>/ckpts."});
  r.add({"salt.callbacks.PredictionWriter", "callback",
         t_struct({
             field("write_tracks", t_bool(), false, "Also write constituent-level outputs."),
             field("write_objects", t_bool(), false, "Write MaskFormer objects.").unsupported("MaskFormer models are not supported by salt-cpp"),
             field("half_precision", t_bool(), false, "Write predictions as float16."),
             field_null("object_classes", t_any(), "MaskFormer object classes.").unsupported("MaskFormer models are not supported by salt-cpp"),
             field_null("extra_vars", t_optional(t_dict(t_list(t_str()))), "Extra input-file variables to copy per input type."),
         }),
         "Writes `salt test` predictions to HDF5."});
  r.add({"lightning.pytorch.callbacks.LearningRateMonitor", "callback",
         t_struct({field_null("logging_interval", t_optional(t_choice({"step", "epoch"})), "When to log the learning rate."),
                   field("log_momentum", t_bool(), false, "Also log the momentum."),
                   field("log_weight_decay", t_bool(), false, "Also log the weight decay.")}),
         "Logs the learning rate to metrics.csv.", Support::kFull, "",
         {"pytorch_lightning.callbacks.LearningRateMonitor"}});
  r.add({"lightning.pytorch.callbacks.TQDMProgressBar", "callback",
         t_struct({field("refresh_rate", t_int(), 1, "Update the progress bar every N steps."),
                   field("process_position", t_int(), 0, "Terminal line of the bar.")}),
         "Progress bar on a terminal; plain lines otherwise.", Support::kFull, "",
         {"pytorch_lightning.callbacks.TQDMProgressBar"}});
  r.add({"lightning.pytorch.callbacks.ModelSummary", "callback",
         t_struct({field("max_depth", t_int(), 1, "Depth of modules in the summary.")}),
         "Prints each component with its parameter count.", Support::kFull, "",
         {"pytorch_lightning.callbacks.ModelSummary"}});
  for (const auto* name : {"salt.callbacks.GradientLoggerCallback", "salt.callbacks.WeightLoggerCallback",
                           "salt.callbacks.IntegratedGradientWriter", "salt.callbacks.ConfusionMatrixCallback"}) {
    r.add({name, "callback", open_args(), "salt callback.", Support::kIgnored, "is not available in salt-cpp; it is skipped"});
  }
}

void add_loggers(ComponentRegistry& r) {
  const char* csv = "is not available in salt-cpp; metrics are written to <run>/metrics.csv instead";
  r.add({"lightning.pytorch.loggers.CometLogger", "logger", open_args(), "Comet.ml logger.", Support::kIgnored, csv,
         {"lightning.pytorch.loggers.comet.CometLogger", "pytorch_lightning.loggers.CometLogger"}});
  r.add({"lightning.pytorch.loggers.TensorBoardLogger", "logger", open_args(), "TensorBoard logger.", Support::kIgnored,
         csv, {"pytorch_lightning.loggers.TensorBoardLogger"}});
  r.add({"lightning.pytorch.loggers.WandbLogger", "logger", open_args(), "Weights & Biases logger.", Support::kIgnored,
         csv, {"pytorch_lightning.loggers.WandbLogger"}});
  r.add({"lightning.pytorch.loggers.CSVLogger", "logger", open_args(), "CSV logger.", Support::kIgnored,
         "is built in: metrics are always written to <run>/metrics.csv", {"pytorch_lightning.loggers.CSVLogger"}});
}

// Registered here until the callbacks move next to their code (callbacks/).
const bool kRegistered = [] {
  ComponentRegistry r;
  add_callbacks(r);
  add_loggers(r);
  for (const auto& spec : r.all()) register_component(spec);
  return true;
}();

}  // namespace

}  // namespace salt::config
