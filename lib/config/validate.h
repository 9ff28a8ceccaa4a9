// Checks a composed config against the schema and returns it fully resolved:
// every default explicit, short component forms expanded, relative paths made
// absolute. The first problem becomes a UsageError naming the key and where it
// was set (file:line or the command-line token), with a did-you-mean.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "config/origins.h"
#include "config/schema.h"

namespace salt::config {

struct Validated {
  YAML::Node resolved;
  std::vector<std::string> warnings;  // one line each: accepted keys that have no effect here
};

Validated validate(const YAML::Node& tree, const Origins& origins, const TypeP& type = root_type());

// Validates one component node of `category` on its own, outside a composed
// config: the model factory uses it on YAML from tests, benchmarks and scripts.
// There are no origins, so errors read "<path>: <problem>" with list items shown
// as [i] (model.model.init_args.tasks.init_args.modules[2].class_path).
YAML::Node validate_component(const YAML::Node& node, const std::string& category, const std::string& path);

}  // namespace salt::config
