// JSON text for the ONNX metadata (salt's gnn_config is a JSON string): YAML
// trees written as JSON with indent 1, as salt's get_onnx_metadata prints them.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

namespace salt::deploy {

// A string node that stays a JSON string even if it reads like a number.
YAML::Node json_str(const std::string& s);

// Maps -> objects (in order), sequences -> arrays, scalars -> true/false/null or a
// number when they read as JSON ones (and are not json_str), else strings.
std::string to_json(const YAML::Node& node, int indent = 1);

std::string json_quote(const std::string& s);

}  // namespace salt::deploy
