// salt's pool_net, as the model sees any pooling: the module that turns a jet's
// encoded constituents (and, for some, a mask decoder's object queries) into the
// one vector the jet-level tasks read. GlobalAttentionPooling (pooling.h) and
// NodeQueryGAP (node_query_gap.h) are two; each registers its builder under the
// "pooling" category as a PoolNet, so the factory never names one.
#pragma once
#include <torch/torch.h>

#include <cstdint>

#include "export/fwd.h"
#include "models/packing/common.h"

namespace salt::models {

// What a pooling may read, one forward pass's worth.
struct PoolInputs {
  const PackedSequence& packed;  // the encoded constituents, valid tokens only
  const Sequence& sequence;      // the same, padded (zeros at padded slots)
  const torch::Tensor& queries;  // a mask decoder's object embeddings [B, M, D]; undefined without one
};

class PoolNetImpl : public torch::nn::Module {
 public:
  using torch::nn::Module::Module;
  // [B, output_dim].
  virtual torch::Tensor pool(const PoolInputs& in) = 0;
  // pool() for one jet in an ONNX graph: tokens [L, D] (all real), queries [M, D]
  // (empty without a mask decoder) -> [1, output_dim].
  virtual ox::Value pool_onnx(ox::Graph& g, const ox::Value& tokens, const ox::Value& queries) = 0;
  // The pooled vector's size for constituents embedded in `constituent_dim`.
  virtual int64_t output_dim(int64_t constituent_dim) const = 0;
  // Pools a mask decoder's object queries (so the model needs one).
  virtual bool needs_queries() const { return false; }
};
TORCH_MODULE(PoolNet);

}  // namespace salt::models
