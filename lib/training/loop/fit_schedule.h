// The fit's schedule, a part of FitRun: the optimizer with its learning-rate
// schedule, the plan of epochs and steps (fit_plan.h) with the validations', and
// where a resumed run's first epoch picks up.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <string>

#include "training/fit_plan.h"
#include "training/optim/optimization.h"

namespace salt::training {

struct FitSchedule {
  std::unique_ptr<Optimization> optimization;
  TrainPlan plan;
  ValPlan val_plan;
  int64_t skip_batches = 0;  // of the first epoch trained: done before a mid-epoch checkpoint
  // Resumed from salt's mid-epoch checkpoint: Lightning starts that epoch over, and
  // does not validate it when none of its batches is left.
  bool lightning_restart = false;
};

// What the run's files record of how it started: config.yaml as written (rank 0;
// checkpoints' hyper_parameters), git's metadata, and what fine-tuning took.
struct RunRecord {
  std::string config_yaml;
  YAML::Node git;
  YAML::Node init_from;  // init_from: what was taken and frozen, for metadata.yaml
  std::string graphs_refusal;  // decide_graphs: empty when the training steps are graphed
};

}  // namespace salt::training
