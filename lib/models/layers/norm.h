// salt.models.layernorm: "LayerNorm" (no affine parameters, so nothing in the
// state dict) and "RMSNorm" (a `weight` of ones, eps 1e-5, computed in float32).
#pragma once
#include <torch/torch.h>

#include <string>

#include "export/fwd.h"

namespace salt::models {

class NormImpl : public torch::nn::Module {
 public:
  // kind: "LayerNorm" or "RMSNorm"; throws UsageError otherwise.
  NormImpl(const std::string& kind, int64_t dim);
  torch::Tensor forward(const torch::Tensor& x);
  // forward(x) where only a matrix product reads the result (a pre-norm layer's
  // attention or dense block): with `norm_cast_kernel` (ForwardKernels), a
  // LayerNorm on a card under bf16 or half autocast is written in that type in one
  // pass (models/kernels/norm_cast.h) instead of in float32 for autocast to cast.
  torch::Tensor forward_for_product(const torch::Tensor& x, bool norm_cast_kernel);
  ox::Value to_onnx(ox::Graph& g, const ox::Value& x);

  torch::Tensor weight;  // RMSNorm only

 private:
  bool rms_;
  int64_t dim_;
};
TORCH_MODULE(Norm);

}  // namespace salt::models
