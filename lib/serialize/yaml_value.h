// A YAML tree as Python's yaml.safe_load gives it (YAML 1.1 scalars: ints with
// `_`, yes/no booleans, ~/null; quoted scalars stay strings), for the parts of
// a config that checkpoints carry as Python values (Lightning's hyper_parameters).
#pragma once
#include <yaml-cpp/yaml.h>

#include "serialize/py_value.h"

namespace salt::serialize {

PyValue yaml_to_py(const YAML::Node& node);

}  // namespace salt::serialize
