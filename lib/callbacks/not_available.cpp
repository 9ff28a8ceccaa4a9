// salt's diagnostic callbacks and Lightning's experiment loggers that salt-cpp
// accepts in a config but does not run: validation warns that they are skipped
// (metrics always go to <run>/metrics.csv).
#include "callbacks/registry.h"

namespace salt::callbacks {
namespace {

config::TypeP open_args() { return config::t_dict(config::t_any()); }

bool register_skipped_callbacks() {
  for (const auto* name : {"salt.callbacks.GradientLoggerCallback", "salt.callbacks.WeightLoggerCallback",
                           "salt.callbacks.IntegratedGradientWriter", "salt.callbacks.ConfusionMatrixCallback"})
    register_callback({{name, "callback", open_args(), "salt callback.", config::Support::kIgnored,
                        "is not available in salt-cpp; it is skipped"}});
  return true;
}

bool register_loggers() {
  using config::ComponentSpec;
  using config::Support;
  const char* csv = "is not available in salt-cpp; metrics are written to <run>/metrics.csv instead";
  for (const auto& spec : std::vector<ComponentSpec>{
           {"lightning.pytorch.loggers.CometLogger", "logger", open_args(), "Comet.ml logger.", Support::kIgnored, csv,
            {"lightning.pytorch.loggers.comet.CometLogger", "pytorch_lightning.loggers.CometLogger"}},
           {"lightning.pytorch.loggers.TensorBoardLogger", "logger", open_args(), "TensorBoard logger.",
            Support::kIgnored, csv, {"pytorch_lightning.loggers.TensorBoardLogger"}},
           {"lightning.pytorch.loggers.WandbLogger", "logger", open_args(), "Weights & Biases logger.", Support::kIgnored,
            csv, {"pytorch_lightning.loggers.WandbLogger"}},
           {"lightning.pytorch.loggers.CSVLogger", "logger", open_args(), "CSV logger.", Support::kIgnored,
            "is built in: metrics are always written to <run>/metrics.csv", {"pytorch_lightning.loggers.CSVLogger"}},
       })
    config::register_component(spec);
  return true;
}

const bool kRegistered = register_skipped_callbacks() && register_loggers();

}  // namespace
}  // namespace salt::callbacks
