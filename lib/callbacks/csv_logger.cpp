// Lightning's CSVLogger: accepted with one warning line, since it is built in
// (metrics always go to <run>/metrics.csv). The other loggers: tensorboard_logger.cpp.
#include "training/callback_registry.h"

namespace salt::callbacks {
namespace {

bool register_loggers() {
  using config::ComponentSpec;
  using config::Support;
  for (const auto& spec : std::vector<ComponentSpec>{
           {"lightning.pytorch.loggers.CSVLogger", "logger", config::t_dict(config::t_any()), "CSV logger.", Support::kIgnored,
            "is built in: metrics are always written to <run>/metrics.csv", {"pytorch_lightning.loggers.CSVLogger"}},
       })
    config::register_component(spec);
  return true;
}

const bool kCsvLoggerRegistered = register_loggers();

}  // namespace
}  // namespace salt::callbacks
