// The settings a run changes after config::resolve (a tuner's result, the
// checkpoint `salt test` finds), changed in one place: the typed RunConfig the
// code reads and the YAML that config.yaml records, together, so the two never
// disagree. Nothing outside lib/config writes a setting into the YAML by key.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>

#include "config/compose.h"
#include "config/run_config.h"

namespace salt::config {

// The learning rates of model.lrs_config a tuner may set.
enum class LrsField { kInitial, kMax, kEnd };

// "lrs_config.max" (LearningRateFinder's attr_name) -> kMax; nullopt for any other name.
std::optional<LrsField> lrs_field(const std::string& attr_name);

// One change of a setting.
struct ConfigEdit {
  enum class Kind { kBatchSize, kLearningRate, kCkptPath } kind = Kind::kBatchSize;
  int64_t batch_size = 0;
  LrsField lrs_field = LrsField::kMax;
  double learning_rate = 0;
  std::string ckpt_path;

  static ConfigEdit set_batch_size(int64_t size);                 // data.batch_size
  static ConfigEdit set_learning_rate(LrsField field, double lr);  // model.lrs_config.<field>
  static ConfigEdit set_ckpt_path(std::string path);              // ckpt_path
  std::string key() const;  // the dotted key it changes, e.g. "data.batch_size"
};

// Changes `run` and `recorded` (the config YAML: RunSetup::config, ResolvedConfig::config) together.
void apply_edit(RunConfig& run, YAML::Node& recorded, const ConfigEdit& edit);
inline void apply_edit(ResolvedConfig& resolved, const ConfigEdit& edit) {
  apply_edit(resolved.run, resolved.config, edit);
}

// A float as PyYAML writes and reads it back (YAML 1.1: 1.0e-05, not 1e-05).
std::string yaml11_float_text(double value);

}  // namespace salt::config
