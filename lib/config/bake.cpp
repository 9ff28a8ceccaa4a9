#include "config/bake.h"

#include "config/yaml_load.h"

namespace salt::config {
namespace {

YAML::Node flow_list(const std::vector<double>& values) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (double v : values) list.push_back(v);
  list.SetStyle(YAML::EmitterStyle::Flow);
  return list;
}

}  // namespace

void bake_seed(YAML::Node config, uint64_t seed) { config["seed_everything"] = seed; }

void bake_class_weights(YAML::Node config, const ClassWeights& weights) {
  for (auto task : config["model"]["model"]["init_args"]["tasks"]["init_args"]["modules"]) {
    auto args = task["init_args"];
    if (!args["use_class_dict"] || !args["use_class_dict"].as<bool>()) continue;
    auto loss_args = args["loss"]["init_args"];
    if (!loss_args["weight"] || !loss_args["weight"].IsNull()) continue;
    auto w = weights(args["input_name"].as<std::string>(), args["label"].as<std::string>());
    if (w) loss_args["weight"] = flow_list(*w);
  }
}

void bake_variables(YAML::Node config, const DataConfig& data) {
  YAML::Node variables(YAML::NodeType::Map);
  for (const auto& [input, vars] : data.variables) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& v : vars) list.push_back(v);
    variables[input] = list;
  }
  // As salt's CLI does: init nets know the variables and the global object.
  for (auto net : config["model"]["model"]["init_args"]["init_nets"]) {
    net["variables"] = copy_tree(variables);
    net["global_object"] = data.global_object;
  }
  YAML::Node norm_config(YAML::NodeType::Map);
  norm_config["norm_dict"] = data.norm_dict;
  norm_config["variables"] = copy_tree(variables);
  norm_config["global_object"] = data.global_object;
  if (!config["data"]["input_map"].IsNull()) norm_config["input_map"] = copy_tree(config["data"]["input_map"]);
  config["model"]["norm_config"] = norm_config;
}

void bake_run_dir(YAML::Node config, const std::string& norm_dict, const std::optional<std::string>& class_dict,
                  const std::string& run_dir) {
  config["data"]["norm_dict"] = norm_dict;
  config["model"]["norm_config"]["norm_dict"] = norm_dict;
  if (class_dict) config["data"]["class_dict"] = *class_dict;
  config["trainer"]["default_root_dir"] = run_dir;
}

}  // namespace salt::config
