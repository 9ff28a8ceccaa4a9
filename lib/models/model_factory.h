// Builds the model from the YAML of salt's `model.model` section
// ({class_path: salt.models.SaltModel, init_args: {init_nets, encoder, pool_net,
// tasks}}), with what salt's CLI injects from the data config passed as a context.
// Salt's defaults apply to absent keys; unknown keys and class paths are
// UsageErrors naming the key path.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

#include "models/model_context.h"
#include "models/salt_wrapper.h"

namespace salt::models {


// `model_model` is the node of `model.model`; `path` names it in errors.
SaltWrapper build_model(const YAML::Node& model_model, const ModelContext& ctx, const std::string& path = "model.model");

}  // namespace salt::models
