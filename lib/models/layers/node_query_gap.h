// salt.models.NodeQueryGAP: global attention pooling over the constituents (nodes)
// and, separately, over a MaskFormer decoder's object queries, concatenated:
//   [sum_i softmax_valid(gate_nn_1(x))_i x_i, sum_m softmax(gate_nn_2([q; 0]))_m [q; 0]_m]
// (salt appends a zero query, whose gate logit is gate_nn_2's bias, so the query
// weights sum to less than one). Output: 2 x input_size. The queries exist only
// with a mask decoder (MaskFormer), so a config naming it without one is refused.
#pragma once
#include <torch/torch.h>

#include "export/fwd.h"

namespace salt::models {

class NodeQueryGAPImpl : public torch::nn::Module {
 public:
  explicit NodeQueryGAPImpl(int64_t input_size);
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
