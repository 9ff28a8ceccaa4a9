// salt.models.NodeQueryGAP: global attention pooling over the constituents (nodes)
// and, separately, over a MaskFormer decoder's object queries, concatenated:
//   [sum_i softmax_valid(gate_nn_1(x))_i x_i, sum_m softmax(gate_nn_2([q; 0]))_m [q; 0]_m]
// (salt appends a zero query, whose gate logit is gate_nn_2's bias, so the query
// weights sum to less than one). Output: 2 x input_size. The queries exist only
// with a mask decoder (MaskFormer), so a config naming it without one is refused.
#pragma once
#include <torch/torch.h>

#include "export/fwd.h"
#include "models/layers/pool_net.h"

namespace salt::models {

class NodeQueryGAPImpl : public PoolNetImpl {
 public:
  explicit NodeQueryGAPImpl(int64_t input_size);
  // The pool_net interface: the padded sequence and the queries, to_onnx, 2D.
  torch::Tensor pool(const PoolInputs& in) override;
  ox::Value pool_onnx(ox::Graph& g, const ox::Value& tokens, const ox::Value& queries) override;
  int64_t output_dim(int64_t constituent_dim) const override { return 2 * constituent_dim; }
  bool needs_queries() const override { return true; }
  // nodes [B, L, D] with pad_mask bool [B, L] (true = padded; undefined = all
  // valid), queries [B, M, D] -> [B, 2D].
  torch::Tensor forward(const torch::Tensor& nodes, const torch::Tensor& pad_mask, const torch::Tensor& queries);
  // forward() for one jet in an ONNX graph: nodes [L, D] (all real; zeros for L = 0),
  // queries [M, D] -> [1, 2D].
  ox::Value to_onnx(ox::Graph& g, const ox::Value& nodes, const ox::Value& queries);

  torch::nn::Linear gate_nn_1{nullptr}, gate_nn_2{nullptr};
};
TORCH_MODULE(NodeQueryGAP);

}  // namespace salt::models
