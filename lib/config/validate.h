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

}  // namespace salt::config
