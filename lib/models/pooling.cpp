#include "models/pooling.h"

#include "models/common.h"

namespace salt::models {

GlobalAttentionPoolingImpl::GlobalAttentionPoolingImpl(int64_t input_size)
    : torch::nn::Module("GlobalAttentionPooling") {
  gate_nn = register_module("gate_nn", torch::nn::Linear(input_size, 1));
}

torch::Tensor GlobalAttentionPoolingImpl::weights(const torch::Tensor& x, const torch::Tensor& pad_mask) {
  auto scores = gate_nn->forward(x).squeeze(-1);
  return masked_softmax(scores, pad_mask, 1);
}

torch::Tensor GlobalAttentionPoolingImpl::forward(const torch::Tensor& x, const torch::Tensor& pad_mask) {
  return (x * weights(x, pad_mask).unsqueeze(-1)).sum(1);
}

torch::Tensor GlobalAttentionPoolingImpl::forward_packed(const torch::Tensor& x, const TokenLayout& layout) {
  auto scores = layout.scatter(gate_nn->forward(x)).squeeze(-1);  // [B, Lc]
  auto w = masked_softmax(scores, layout.pad_mask, 1);
  return torch::bmm(w.unsqueeze(1), layout.scatter(x)).squeeze(1);
}

}  // namespace salt::models
