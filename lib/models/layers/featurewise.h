// salt.models.FeaturewiseTransformation (FiLM, Dumoulin et al.): networks of the
// `parameters` inputs whose outputs scale and/or shift the features of a layer:
//   features = scale_net(p) * features + bias_net(p), then LayerNorm if apply_norm.
// SaltModel's `featurewise_nets` attach one to each init net's input (layer: input),
// to the input of every encoder layer (layer: encoder), or to the encoder output
// (layer: global), as salt does.
#pragma once
#include <torch/torch.h>

#include <optional>
#include <string>

#include "models/layers/dense.h"

#include "export/fwd.h"

namespace salt::models {

struct FeaturewiseOptions {
  TORCH_ARG(std::string, layer) = "input";  // input, encoder or global
  TORCH_ARG(std::optional<DenseOptions>, dense_config_scale) = std::nullopt;
  TORCH_ARG(std::optional<DenseOptions>, dense_config_bias) = std::nullopt;
  TORCH_ARG(bool, apply_norm) = false;
};

// One entry of SaltModel's featurewise_nets (input sizes are set by the builder:
// the number of `parameters` variables).
const config::Binding<FeaturewiseOptions>& featurewise_binding();

class FeaturewiseImpl : public torch::nn::Module {
 public:
  // num_parameters: len(data.variables.parameters). Throws UsageError without nets.
  FeaturewiseImpl(FeaturewiseOptions options, int64_t num_parameters);
  // params: [B, P] with features [B, L, D] (or [B, D]), or [N, P] rows aligned with
  // features [N, D].
  torch::Tensor forward(const torch::Tensor& params, const torch::Tensor& features);
  int64_t num_features() const;
  // forward() in an ONNX graph: params [1, P] (one jet), features [n, D] or [1, D].
  ox::Value to_onnx(ox::Graph& g, const ox::Value& params, const ox::Value& features);

  Dense scale_net{nullptr}, bias_net{nullptr};
  torch::nn::LayerNorm norm{nullptr};  // torch's, with affine weights (salt uses nn.LayerNorm)

 private:
  FeaturewiseOptions options_;
};
TORCH_MODULE(Featurewise);

}  // namespace salt::models
