// What salt's CLI injects into the model from the data config (data.variables,
// the norm and class dicts, the file's class names, ...): what the components'
// builders read beside their own init_args (registry.h's BuildContext). Its own
// header so that layers, tasks and the MaskFormer include it and not the
// assembled model (model_factory.h, salt_wrapper.h).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/edge_config.h"
#include "config/mf_config.h"
#include "models/layers/input_norm.h"

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

}  // namespace salt::models
