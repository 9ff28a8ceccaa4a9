// salt.models.attention.EdgeAttention: multi-head self-attention whose scores take
// a per-head bias from the edge features and whose weights are gated by them:
//   scores = q k^T * scale + linear_e(edges)      (per head, [B, H, L, L])
//   weights = softmax(scores masked at padded keys) * sigmoid(linear_g(edges))
//   out = out_proj(weights v);  edges_out = linear_e_out(scores) if update_edges
// Attention dropout, as salt, drops scores before the softmax. Always the explicit
// kernel (salt has no fused backend for it either).
#pragma once
#include <torch/torch.h>

#include <utility>

#include "models/layers/attention.h"

#include "export/fwd.h"

namespace salt::models {

struct EdgeAttentionOptions {
  EdgeAttentionOptions(AttentionOptions attn, int64_t edge_embed_dim)
      : attn_(std::move(attn)), edge_embed_dim_(edge_embed_dim) {}
  TORCH_ARG(AttentionOptions, attn);  // embed_dim, num_heads, dropout, bias, q/k/v norms, mup
  TORCH_ARG(int64_t, edge_embed_dim);
  TORCH_ARG(bool, update_edges) = false;
};

class EdgeAttentionImpl : public torch::nn::Module {
 public:
  explicit EdgeAttentionImpl(const EdgeAttentionOptions& options);
  // x [B, L, D]; edges [B, L, L, E]; pad_mask bool [B, L] (true = padded, never
  // sends). -> (out [B, L, D], edges: updated when update_edges, else the input).
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x, const torch::Tensor& edges,
                                                  const torch::Tensor& pad_mask);
  // forward() for one jet in an ONNX graph: x [L, D], edges [L, L, E] (no padding).
  std::pair<ox::Value, ox::Value> to_onnx(ox::Graph& g, const ox::Value& x, const ox::Value& edges);
  void reset_parameters();

  torch::Tensor in_proj_weight, in_proj_bias;
  torch::nn::Linear out_proj{nullptr}, linear_e{nullptr}, linear_g{nullptr}, linear_e_out{nullptr};
  Norm q_norm{nullptr}, k_norm{nullptr}, v_norm{nullptr};

 private:
  EdgeAttentionOptions options_;
  int64_t head_dim_;
};
TORCH_MODULE(EdgeAttention);

}  // namespace salt::models
