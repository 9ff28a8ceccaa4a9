// Activation modules looked up by salt's names (the class names in torch.nn).
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "config/schema.h"

namespace salt::models {

// A fresh activation module for a torch.nn class name ("ReLU", "SiLU", ...).
// Throws UsageError naming `where` for an unknown name.
torch::nn::AnyModule make_activation(const std::string& name, const std::string& where = "activation");

// The names make_activation accepts (for error messages and docs).
const std::vector<std::string>& activation_names();

// The schema type of an activation key: one of activation_names().
config::TypeP activation_type();

}  // namespace salt::models
