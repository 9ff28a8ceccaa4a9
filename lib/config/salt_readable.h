// A run's config.yaml as salt's own CLI saves it, so that salt (`salt test -c`,
// its to_onnx, ModelWrapper.load_from_checkpoint) instantiates it: the values
// salt's SaltCLI fills in before instantiating (norm_config's four keys, the jet
// task's class names from the training file, each init net's variables and
// global object), without what salt's classes refuse (Transformer's depth, an
// init net's null input_size, MaskFormer's class_weights inside loss_config) or
// what salt drops on saving (the link targets model.name, model.global_object).
// salt-cpp reads the result as it reads salt's own config.yaml.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace salt::config {

// `flavour_labels`: the training file's flavour_label attribute (may be empty).
void make_salt_readable(YAML::Node& config, const std::vector<std::string>& flavour_labels);

// Lightning's hyper_parameters of a salt checkpoint, from its config.yaml: the
// model section with the link targets config.yaml leaves out (name,
// global_object) put back, as ModelWrapper needs them. Undefined when `config`
// has no model mapping.
YAML::Node model_hparams(const YAML::Node& config);

}  // namespace salt::config
