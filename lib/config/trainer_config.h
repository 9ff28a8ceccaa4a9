// The `trainer` section: its schema (every Lightning Trainer key salt configs
// use, with salt-cpp's support for each) bound to the typed TrainerConfig the fit
// loop uses, with Lightning's conventions resolved (null max_epochs, fractional
// batch limits, fast_dev_run true = 1, ...).
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/bind.h"

namespace salt::config {

// Lightning's limit_*_batches: all, a count, or a fraction of the epoch.
struct BatchLimit {
  enum class Kind { kAll, kCount, kFraction } kind = Kind::kAll;
  double value = 1.0;
  int64_t apply(int64_t available) const;  // batches to run out of `available`
};

enum class Precision { kFloat32, kBFloat16Mixed, kFloat16Mixed };

// trainer.profiler: Lightning's SimpleProfiler ("simple" or its class_path).
struct ProfilerConfig {
  std::optional<std::string> dirpath, filename;
  bool extended = true;
};
// The report's file in dirpath (or the run directory): fit-<filename or profiler>.txt.
std::string profiler_report_name(const ProfilerConfig& p);

struct TrainerConfig {
  std::string accelerator = "auto";  // cpu, gpu/cuda, auto
  std::vector<int> device_ids;       // explicit GPU ids (devices: [0, 2])
  int num_devices = 1;               // devices: N (or the size of device_ids); auto = 1
  int num_nodes = 1;
  Precision precision = Precision::kFloat32;
  std::string precision_name = "32-true";
  int64_t fast_dev_run = 0;  // N train + N val batches, nothing written
  std::optional<int64_t> max_epochs_given;  // as configured (null: Lightning's rule below)
  int64_t max_epochs = 1000;  // -1: unlimited (max_steps decides)
  int64_t max_steps = -1;
  std::optional<int64_t> min_epochs, min_steps;  // a callback's stop waits for these
  std::optional<double> max_time_seconds;        // trainer.max_time (a Timer stops the run)
  std::optional<ProfilerConfig> profiler;        // null: no profiling
  BatchLimit limit_train, limit_val, limit_test;
  BatchLimit overfit_batches;  // kAll: off; else train and validation limit, training unshuffled
  int64_t check_val_every_n_epoch = 1;  // 0: null (validation by val_check_interval batches across epochs)
  BatchLimit val_check_interval;         // kAll: once per epoch, at its end
  int64_t log_every_n_steps = 50;
  // Lightning's sanity check, which salt-cpp does not run; its persistent
  // validation iterator still decides where salt's batch order draws.
  int64_t num_sanity_val_steps = 2;
  int64_t accumulate_grad_batches = 1;
  std::optional<double> gradient_clip_val;
  std::string gradient_clip_algorithm = "norm";
  bool deterministic = false;
  bool deterministic_warn_only = false;  // deterministic: warn
  bool enable_checkpointing = true;
  bool enable_progress_bar = true;
  bool enable_model_summary = true;
  std::string default_root_dir = "logs";
  // trainer.callbacks: validated {class_path, init_args} nodes, built by
  // callbacks::make_callbacks (each callback reads its own init_args).
  std::vector<ComponentNode> callbacks;
  std::vector<ComponentNode> loggers;  // trainer.logger (a component; false/null: none besides metrics.csv)
};

const Binding<TrainerConfig>& trainer_binding();

// Lightning's durations (Timer, max_time): 'DD:HH:MM:SS' or a dict of
// timedelta's arguments ({hours: 1, minutes: 30}), in seconds. A bad one is a
// UsageError naming `where`.
double duration_seconds(const YAML::Node& node, const std::string& where);

// The trainer section of a validated config (the whole config, not the section).
TrainerConfig trainer_config_from_yaml(const YAML::Node& validated_config);

}  // namespace salt::config
