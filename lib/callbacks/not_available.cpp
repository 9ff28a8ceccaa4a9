// salt's diagnostic callbacks that salt-cpp accepts in a config but does not run
// (validation warns that they are skipped), and Lightning's CSVLogger, which is
// built in (metrics always go to <run>/metrics.csv). The other loggers:
// tensorboard_logger.cpp.
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
  for (const auto& spec : std::vector<ComponentSpec>{
           {"lightning.pytorch.loggers.CSVLogger", "logger", open_args(), "CSV logger.", Support::kIgnored,
            "is built in: metrics are always written to <run>/metrics.csv", {"pytorch_lightning.loggers.CSVLogger"}},
       })
    config::register_component(spec);
  return true;
}

const bool kRegistered = register_skipped_callbacks() && register_loggers();

}  // namespace
}  // namespace salt::callbacks
