// salt.models.EdgeConstructor and salt.utils.edge_features: pairwise features of
// one constituent input, from its raw (un-normalised) variables, added to the
// inputs as `_edge_features_<input>` [B, L, L, F] before the input normalisation
// (which passes names starting with '_' through). Padded constituents get edges
// too (from whatever their slots hold); the attention never lets them send.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "config/edge_config.h"
#include "models/packing/common.h"

#include "export/fwd.h"

namespace salt::models {

// x: [B, L, V] raw constituent variables; columns: variable name -> column of x.
// Feature f of pair (i, j), with d = x_j - x_i (phi wrapped only from above, as
// salt does): dR = log sqrt(deta^2 + dphi^2), kt = log(min(pt_i, pt_j) dR),
// z = log(min pt / (pt_i + pt_j)), isSelfLoop = [i == j], subjetIndex =
// [s_i == s_j and s_j >= 0], mass = 0.5 log max(m^2, 1e-8) of the summed
// four-momenta. NaN and +-inf become 0 (e.g. dR of a pair with itself).
torch::Tensor edge_features(const torch::Tensor& x, const std::map<std::string, int64_t>& columns,
                            const std::vector<std::string>& features);
// The same for one jet in an ONNX graph: raw x [L, V] -> [L, L, F].
ox::Value edge_features_onnx(ox::Graph& g, const ox::Value& x, const std::map<std::string, int64_t>& columns,
                             const std::vector<std::string>& features);

class EdgeConstructor {
 public:
  // variables: the input's variables in column order (data.variables[input_name]).
  EdgeConstructor(config::EdgeConstructorConfig config, const std::vector<std::string>& variables);
  // Adds `_edge_features_<input>` computed from inputs[input_name]; InputError if absent.
  void add_to(TensorMap& inputs) const;
  // The edge features of one jet's raw constituents [L, V] in an ONNX graph.
  ox::Value to_onnx(ox::Graph& g, const ox::Value& raw) const;
  const config::EdgeConstructorConfig& config() const { return config_; }

 private:
  config::EdgeConstructorConfig config_;
  std::map<std::string, int64_t> columns_;
};

}  // namespace salt::models
