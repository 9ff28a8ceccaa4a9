// salt's data.edge_constructors: pairwise "edge" features between the constituents
// of one input (GN2XE), computed from their raw (un-normalised) variables before
// the input normalisation and fed to the model as the input
// `_edge_features_<input_name>` [B, L, L, len(edge_features)]. The computation:
// models/layers/edge_features.h.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "config/bind.h"

namespace salt::config {

struct EdgeConstructorConfig {
  std::string input_name;                  // a constituent input of data.variables
  std::vector<std::string> edge_features;  // dR, z, kt, isSelfLoop, subjetIndex, mass
};

// The edge-feature input's name: "_edge_features_" + input name (salt's).
std::string edge_input_name(const std::string& input_name);

// The variables each edge feature is computed from (salt's check_edge_config);
// UsageError naming `path` for an unknown feature.
std::vector<std::string> edge_feature_requirements(const std::string& feature, const std::string& path);

const Binding<EdgeConstructorConfig>& edge_constructor_binding();

// data.edge_constructors against data.variables: at most one constructor (salt's
// limit), its input listed, every feature known and its variables present.
// UsageError naming data.edge_constructors[i] otherwise.
void check_edge_constructors(const std::vector<EdgeConstructorConfig>& constructors,
                             const std::map<std::string, std::vector<std::string>>& variables);

}  // namespace salt::config
