// The resolved config's `trainer` section and callbacks as a plain struct, in the
// terms the fit loop uses (Lightning's conventions resolved: null max_epochs,
// fractional batch limits, fast_dev_run true = 1, ...).
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace salt::training {

// Lightning's limit_*_batches: all, a count, or a fraction of the epoch.
struct BatchLimit {
  enum class Kind { kAll, kCount, kFraction } kind = Kind::kAll;
  double value = 1.0;
  int64_t apply(int64_t available) const;  // batches to run out of `available`
};

enum class Precision { kFloat32, kBFloat16Mixed, kFloat16Mixed };

struct TrainerConfig {
  std::string accelerator = "auto";  // cpu, gpu/cuda, auto
  std::vector<int> device_ids;       // explicit GPU ids (devices: [0, 2])
  int num_devices = 1;               // devices: N (or the size of device_ids); auto = 1
  int num_nodes = 1;
  Precision precision = Precision::kFloat32;
  std::string precision_name = "32-true";
  int64_t fast_dev_run = 0;  // N train + N val batches, nothing written
  int64_t max_epochs = 1000;  // -1: unlimited (max_steps decides)
  int64_t max_steps = -1;
  BatchLimit limit_train, limit_val, limit_test;
  int64_t check_val_every_n_epoch = 1;
  int64_t log_every_n_steps = 50;
  int64_t accumulate_grad_batches = 1;
  std::optional<double> gradient_clip_val;
  std::string gradient_clip_algorithm = "norm";
  bool deterministic = false;
  bool enable_checkpointing = true;
  bool enable_progress_bar = true;
  bool enable_model_summary = true;
  std::string default_root_dir = "logs";

  // trainer.callbacks: validated {class_path, init_args} nodes, built by
  // callbacks::make_callbacks (each callback reads its own init_args).
  std::vector<YAML::Node> callbacks;
};

TrainerConfig trainer_config_from_yaml(const YAML::Node& resolved_config);

}  // namespace salt::training
