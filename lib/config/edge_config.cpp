#include "config/edge_config.h"

#include <algorithm>

#include "core/errors.h"

namespace salt::config {

std::string edge_input_name(const std::string& input_name) { return "_edge_features_" + input_name; }

std::vector<std::string> edge_feature_requirements(const std::string& feature, const std::string& path) {
  if (feature == "dR") return {"eta", "phi"};
  if (feature == "z") return {"pt"};
  if (feature == "kt") return {"eta", "phi", "pt"};
  if (feature == "isSelfLoop") return {};
  if (feature == "subjetIndex") return {"subjetIndex"};
  if (feature == "mass") return {"pt", "eta", "phi", "energy"};
  throw UsageError(path + ": unknown edge feature '" + feature + "' (choose from dR, z, kt, isSelfLoop, subjetIndex, mass)");
}

const Binding<EdgeConstructorConfig>& edge_constructor_binding() {
  static const Binding<EdgeConstructorConfig> b = [] {
    Binding<EdgeConstructorConfig> e{EdgeConstructorConfig{}};
    e.required("input_name", SALT_FIELD(input_name), "Constituent input whose pairs get edge features, e.g. tracks.")
        .required("edge_features", SALT_FIELD(edge_features),
                  "Features per pair (i, j), from the raw variables: dR = log dR (eta, phi), z = log(min pt / pt sum), "
                  "kt = log(min pt * dR), isSelfLoop (i == j), subjetIndex (same subjet index >= 0), mass = "
                  "log of the pair's invariant mass (pt, eta, phi, energy).");
    return e;
  }();
  return b;
}

void check_edge_constructors(const std::vector<EdgeConstructorConfig>& constructors,
                             const std::map<std::string, std::vector<std::string>>& variables) {
  if (constructors.size() > 1)
    throw UsageError("data.edge_constructors: at most one edge constructor is supported (as in salt), got " +
                     std::to_string(constructors.size()));
  for (size_t i = 0; i < constructors.size(); ++i) {
    const auto& c = constructors[i];
    const std::string path = "data.edge_constructors[" + std::to_string(i) + "]";
    auto vars = variables.find(c.input_name);
    if (vars == variables.end())
      throw UsageError(path + ".input_name: '" + c.input_name + "' is not an input of data.variables");
    if (c.edge_features.empty()) throw UsageError(path + ".edge_features: list at least one edge feature");
    for (size_t f = 0; f < c.edge_features.size(); ++f) {
      const auto fpath = path + ".edge_features[" + std::to_string(f) + "]";
      std::string missing;
      for (const auto& v : edge_feature_requirements(c.edge_features[f], fpath))
        if (std::find(vars->second.begin(), vars->second.end(), v) == vars->second.end())
          missing += (missing.empty() ? "" : ", ") + v;
      if (!missing.empty())
        throw UsageError(fpath + ": '" + c.edge_features[f] + "' needs the " + c.input_name + " variable(s) " + missing +
                         " in data.variables." + c.input_name);
    }
  }
}

}  // namespace salt::config
