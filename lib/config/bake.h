// What salt writes into a run's config.yaml at the start of a run, beyond the
// resolved config: the seed it drew, the class weights of use_class_dict tasks,
// each init net's variables and global object, and model.norm_config. The YAML
// is edited in place (its nodes are shared with the caller's).
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/data_config.h"

namespace salt::config {

void bake_seed(YAML::Node config, uint64_t seed);

// weights(input, label): the class dict's weights, nullopt when there is none.
using ClassWeights = std::function<std::optional<std::vector<double>>(const std::string& input, const std::string& label)>;
void bake_class_weights(YAML::Node config, const ClassWeights& weights);

void bake_variables(YAML::Node config, const DataConfig& data);

// The run directory's own copies, as salt records them in config.yaml: the norm
// dict (data.norm_dict and model.norm_config.norm_dict), the class dict when the
// run has one (data.class_dict), and the run directory as trainer.default_root_dir
// (resuming from this config strips it again).
void bake_run_dir(YAML::Node config, const std::string& norm_dict, const std::optional<std::string>& class_dict,
                  const std::string& run_dir);

}  // namespace salt::config
