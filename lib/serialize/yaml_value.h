// A YAML tree as Python's yaml.safe_load gives it (YAML 1.1 scalars: ints with
// `_`, yes/no booleans, ~/null; quoted scalars stay strings), for the parts of
// a config that checkpoints carry as Python values (Lightning's hyper_parameters).
#pragma once
#include <yaml-cpp/yaml.h>

#include "serialize/py_value.h"

namespace salt::serialize {

// Nested deeper than kMaxNesting (core/nesting.h): std::invalid_argument.
PyValue yaml_to_py(const YAML::Node& node);

// The reverse, as YAML text in flow style: strings double-quoted (so "1e-5" stays
// a string), None as null. Tensors and objects have no YAML form, and a value
// nested deeper than kMaxNesting none written: std::invalid_argument.
std::string py_to_yaml(const PyValue& value);

}  // namespace salt::serialize
