// Activation modules looked up by salt's names (the class names in torch.nn).
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "config/schema.h"

#include "export/fwd.h"

namespace salt::models {

// A fresh activation module for a torch.nn class name ("ReLU", "SiLU", ...).
// Throws UsageError naming `where` for an unknown name.
torch::nn::AnyModule make_activation(const std::string& name, const std::string& where = "activation");

// The activation module `m` (one make_activation made) applied to x in an ONNX
// graph, with torch's default constants; UsageError for a module it does not know.
ox::Value activation_to_onnx(ox::Graph& g, const torch::nn::Module& m, const ox::Value& x);

// The names make_activation accepts (for error messages and docs).
const std::vector<std::string>& activation_names();

// The schema type of an activation key: one of activation_names().
config::TypeP activation_type();

}  // namespace salt::models
