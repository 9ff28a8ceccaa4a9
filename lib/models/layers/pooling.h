// salt.models.GlobalAttentionPooling: weights = softmax over the valid tokens
// (registers included) of gate_nn(x) = Linear(D, 1); pooled = sum(weights * x).
// A sequence with no valid token pools to zeros (never NaN).
#pragma once
#include <torch/torch.h>

#include "export/fwd.h"
#include "models/layers/pool_net.h"
#include "models/packing/common.h"

namespace salt::models {

struct GlobalAttentionPoolingOptions {
  TORCH_ARG(int64_t, input_size) = 0;  // must equal the embedding size it pools
};

// sum_i softmax_i(gate(x)) x_i over the rows of x [L, D] in an ONNX graph -> [1, D]
// (zeros for L = 0); also NodeQueryGAP's two halves.
ox::Value attention_pool_onnx(ox::Graph& g, const ox::Value& x, const torch::nn::Linear& gate);

class GlobalAttentionPoolingImpl : public PoolNetImpl {
 public:
  explicit GlobalAttentionPoolingImpl(int64_t input_size);
  // The pool_net interface: the packed rows, to_onnx, D.
  torch::Tensor pool(const PoolInputs& in) override;
  ox::Value pool_onnx(ox::Graph& g, const ox::Value& tokens, const ox::Value& queries) override;
  int64_t output_dim(int64_t constituent_dim) const override { return constituent_dim; }
  // x: [B, L, D]; pad_mask: bool [B, L] true = padded (may be undefined).
  // Returns [B, D].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& pad_mask = {});
  // Packed tokens x [N, D] (see TokenLayout); same result as forward() on the
  // padded layout. Returns [B, D].
  torch::Tensor forward_packed(const torch::Tensor& x, const TokenLayout& layout);
  // forward() for one jet in an ONNX graph: x [L, D] -> [1, D] (zeros for L = 0).
  ox::Value to_onnx(ox::Graph& g, const ox::Value& x);
  // The softmax weights [B, L] (for tests and inspection).
  torch::Tensor weights(const torch::Tensor& x, const torch::Tensor& pad_mask = {});

  torch::nn::Linear gate_nn{nullptr};
};
TORCH_MODULE(GlobalAttentionPooling);

}  // namespace salt::models
