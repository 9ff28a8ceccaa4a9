// salt.models.InputNorm: x = (x - mean) / std per variable, applied to every slot
// of an input (padded slots too, as in salt). The statistics are buffers named
// `<input>_means` / `<input>_stds`, so a wrapper registering this module as `norm`
// has salt's state-dict keys (`norm.tracks_means`).
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "models/packing/common.h"

#include "export/fwd.h"

namespace salt::models {

struct NormStats {
  std::vector<float> means;
  std::vector<float> stds;
};

class InputNormImpl : public torch::nn::Module {
 public:
  // stats: input name -> per-variable means/stds, in the column order of the
  // input. Throws UsageError for a length mismatch, non-finite value or std 0.
  explicit InputNormImpl(const std::map<std::string, NormStats>& stats);

  // Returns a new map; EDGE, parameters, objects and _-prefixed inputs pass
  // through; any other input without statistics is an error (salt fails too).
  TensorMap forward(const TensorMap& inputs);
  torch::Tensor normalise(const std::string& input, const torch::Tensor& x) const;

  // normalise() in an ONNX graph: x [rows, F] of `input`.
  ox::Value to_onnx(ox::Graph& g, const std::string& input, const ox::Value& x) const;

  // Inputs salt never normalises: EDGE, parameters, objects and _-prefixed ones.
  static bool passes_through(const std::string& input);
  bool has(const std::string& input) const { return buffers_.count(input) > 0; }

 private:
  std::map<std::string, std::pair<torch::Tensor, torch::Tensor>> buffers_;
};
TORCH_MODULE(InputNorm);

}  // namespace salt::models
