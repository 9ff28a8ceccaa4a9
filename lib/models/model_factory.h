// Builds the model from the YAML of salt's `model.model` section
// ({class_path: salt.models.SaltModel, init_args: {init_nets, encoder, pool_net,
// tasks}}), with what salt's CLI injects from the data config passed as a context.
// Salt's defaults apply to absent keys; unknown keys and class paths are
// UsageErrors naming the key path.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/layers/input_norm.h"
#include "models/salt_wrapper.h"

namespace salt::models {

struct ModelContext {
  // data.variables: input name -> variable names in column order.
  std::map<std::string, std::vector<std::string>> variables;
  std::string global_object = "jets";
  // Normalisation statistics per input (in `variables` order), from data.norm_dict.
  std::map<std::string, NormStats> norm;
  // Class weights for tasks with use_class_dict (data.class_dict[input][label]);
  // nullopt when the class dict has none.
  std::function<std::optional<std::vector<float>>(const std::string& input, const std::string& label)> class_weights;
  // Class names from the training file (e.g. the jets' flavour_label attribute)
  // for classification tasks without class_names; nullopt when unknown.
  std::function<std::optional<std::vector<std::string>>(const std::string& input, const std::string& label)> class_names;
  std::string loss_mode = "wsum";  // model.loss_mode
  std::string name = "salt";       // top-level `name`, the output column prefix
  std::optional<config::MaskformerConfig> mf_config;  // data.mf_config (a mask_decoder needs it)
  std::vector<config::EdgeConstructorConfig> edge_constructors;  // data.edge_constructors
};

// `model_model` is the node of `model.model`; `path` names it in errors.
SaltWrapper build_model(const YAML::Node& model_model, const ModelContext& ctx, const std::string& path = "model.model");

}  // namespace salt::models
