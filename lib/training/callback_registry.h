// Callbacks register themselves next to their code: the config spec (salt or
// Lightning class path, init_args binding, help) and the builder, in one call.
// make_callbacks() turns `trainer.callbacks` into the run's CallbackList and adds
// what Lightning adds by itself (a progress bar, a model summary, the metrics
// logger) when the config has none of them.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <memory>
#include <vector>

#include "training/callback.h"
#include "config/bind.h"
#include "config/schema.h"
#include "training/trainer_config.h"

namespace salt::callbacks {

struct CallbackRegistration {
  config::ComponentSpec spec;  // category "callback", or "logger" for trainer.logger
  // Builds it from validated init_args; null: accepted, but has no effect (the
  // spec's note says why, and validation warns).
  std::function<std::unique_ptr<Callback>(const YAML::Node& init_args)> build;
  // Lightning's defaults: added with default init_args when the config names no
  // callback of this class and this says so for the trainer settings.
  std::function<bool(const training::TrainerConfig&)> default_when;
  // The init_args of that default (null: the defaults), e.g. Timer's duration
  // from trainer.max_time.
  std::function<YAML::Node(const training::TrainerConfig&)> default_args;
};

bool register_callback(CallbackRegistration registration);

// The callbacks of a run: the configured ones (trainer.callbacks) in order, then
// the defaults, then the metrics logger; checkpoint writers moved last.
CallbackList make_callbacks(const std::vector<config::ComponentNode>& configured, const training::TrainerConfig& trainer);

// The metrics logger every run has (<run>/metrics.csv), defined in metrics_writer.cpp.
std::unique_ptr<Callback> make_metrics_writer();

}  // namespace salt::callbacks
