// salt.models.PositionalEncoder: an init net's `pos_enc`. Sine/cosine encodings of
// some of the input's variables are added to the init net's output:
//   per variable: d = dim // (2 * len(variables)) frequencies
//   omega_k = alpha * 10000^(k * (2/d - 1) / (d - 1)), k = 0..d-1 (torch.logspace)
//   [sin(x * omega), cos(x * omega)], or for `phi` (periodic) [sin(sin(x) * omega), sin(cos(x) * omega)]
// concatenated over the variables, zero-padded to dim. No trainable parameters.
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "config/bind.h"

#include "export/fwd.h"

namespace salt::models {

struct PositionalEncoderOptions {
  TORCH_ARG(std::vector<std::string>, variables);
  TORCH_ARG(int64_t, dim) = 0;
  TORCH_ARG(double, alpha) = 100;
};

class PositionalEncoder {
 public:
  PositionalEncoder() = default;
  explicit PositionalEncoder(PositionalEncoderOptions options);
  // x: [..., len(variables)] (the variables' columns) -> [..., dim].
  torch::Tensor operator()(const torch::Tensor& x) const;
  // The same for one jet in an ONNX graph: x [L, len(variables)] -> [L, dim].
  ox::Value to_onnx(ox::Graph& g, const ox::Value& x) const;
  const PositionalEncoderOptions& options() const { return options_; }

 private:
  PositionalEncoderOptions options_;
};

// The `pos_enc` node: {class_path: salt.models.PositionalEncoder, init_args: {variables, dim, alpha}}.
PositionalEncoderOptions read_pos_enc(const config::ComponentNode& node, const std::string& key);

}  // namespace salt::models
