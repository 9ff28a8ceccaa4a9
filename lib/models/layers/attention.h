// salt.models.Attention: multi-head self-attention with a packed input projection
// (`in_proj_weight` [3D, D] xavier-uniform, `in_proj_bias` [3D] zero) and
// `out_proj` Linear(D, D). Padded tokens may receive attention but never send it.
#pragma once
#include <torch/torch.h>

#include <string>

#include "config/bind.h"
#include "models/layers/norm.h"
#include "models/packing/common.h"

#include "export/fwd.h"

namespace salt::models {

// salt's backend names. They select a kernel, never change the result: with
// LibTorch >= 2.0 all but torch-math use the fused at::scaled_dot_product_attention,
// otherwise (and for torch-math) an explicit masked softmax.
bool is_valid_attn_type(const std::string& attn_type);
bool attn_type_uses_fused_kernel(const std::string& attn_type);

struct AttentionOptions {
  explicit AttentionOptions(int64_t embed_dim) : embed_dim_(embed_dim) {}
  TORCH_ARG(int64_t, embed_dim);
  TORCH_ARG(int64_t, num_heads) = 1;
  TORCH_ARG(std::string, attn_type) = "torch-meff";  // salt's Attention default
  TORCH_ARG(double, dropout) = 0.0;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(bool, do_qk_norm) = false;  // RMSNorm per head on q and k
  TORCH_ARG(bool, do_v_norm) = false;   // RMSNorm per head on v
  // muP (salt's `mup`): scores scaled by 1 / head_dim instead of 1 / sqrt(head_dim);
  // init: q rows of in_proj_weight zero, k and v rows N(0, 1 / head_dim), out_proj
  // N(0, 1 / embed_dim), biases zero.
  TORCH_ARG(bool, mup) = false;
};

// 1 / head_dim under muP, else 1 / sqrt(head_dim).
double attention_scale(int64_t head_dim, bool mup);
// salt's muP init of a packed in-projection [3D, D] (q rows zero, k and v rows
// N(0, 1 / head_dim)) and of out_proj (N(0, 1 / D)), biases zero.
void mup_init_attention(torch::Tensor& in_proj_weight, torch::Tensor& in_proj_bias, torch::nn::Linear& out_proj,
                        int64_t head_dim);

// Explicit masked-softmax attention. q, k, v: [B, H, L, Dh]; key_allowed: bool
// broadcastable to [B, H, Lq, Lk] (true = may attend), or undefined. Rows with no
// allowed key give zeros.
torch::Tensor attention_explicit(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 const torch::Tensor& key_allowed, double dropout_p, double scale);

// Explicit attention with a per-key padding mask, q, k, v [B, H, L, Dh] and
// key_pad bool [B, L] (true = may not send); every row must have an allowed key
// (the encoder's registers guarantee it). scale * q k^T and the mask are applied
// in one baddbmm.
torch::Tensor attention_key_padded(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   const torch::Tensor& key_pad, double dropout_p, double scale);

// Variable-length self-attention on packed tokens, a CPU float32 kernel with its
// own backward (autograd function). qkv [N, 3D]: the fused in-projection of N
// packed tokens ([q | k | v], heads of D / heads values each). The tokens of jet b
// are rows order[starts[b] .. starts[b+1]) (see TokenLayout); every token attends
// to all tokens of its jet and nothing else — exactly the padded kernel with the
// padding mask, without computing padded rows or keys, and with no per-(jet, head)
// dispatch (LibTorch 1.13's bmm loops over small matrices one by one). Returns
// [N, D]. Needs a defined, contiguous CPU float32 qkv and no attention dropout.
bool varlen_attention_applies(const torch::Tensor& qkv, double dropout_p);
torch::Tensor varlen_attention(const torch::Tensor& qkv, const torch::Tensor& order, const torch::Tensor& starts,
                               int64_t num_heads, double scale);

// One jet's attention heads in an ONNX graph: [L, H * Dh] -> [H, L, Dh], and back.
ox::Value split_heads_onnx(ox::Graph& g, const ox::Value& x, int64_t num_heads, int64_t head_dim);
ox::Value merge_heads_onnx(ox::Graph& g, const ox::Value& x, int64_t embed_dim);

// The encoder's `attn_kwargs` (embed_dim and attn_type come from the encoder).
const config::Binding<AttentionOptions>& attention_binding();

class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const AttentionOptions& options);
  // x: [B, L, D]; pad_mask: bool [B, L], true = padded (may be undefined).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& pad_mask = {});
  // Cross-attention (salt's Attention(x, kv=kv, kv_mask=..., attn_mask=...)): queries
  // from x [B, Lq, D], keys and values from kv [B, Lk, D] through the same packed
  // projection; kv_mask bool [B, Lk] (true = padded, never sends), attn_mask bool
  // [B, Lq, Lk] (true = may attend). Explicit softmax kernel; a query with no
  // allowed key gets zeros. -> [B, Lq, D].
  torch::Tensor forward_cross(const torch::Tensor& x, const torch::Tensor& kv, const torch::Tensor& kv_mask = {},
                              const torch::Tensor& attn_mask = {});
  // Packed tokens x [N, D] (see TokenLayout): the projections run on the N tokens
  // only; q, k, v are scattered to the compact [B, Lc] layout for the kernel and the
  // output gathered back before out_proj. Same result as forward() on the valid tokens;
  // static rows' padding rows (layout.row_valid) go in and come out as zeros.
  torch::Tensor forward_packed(const torch::Tensor& x, const TokenLayout& layout);
  // forward() for one jet in an ONNX graph: x [L, D] (no padding) -> [L, D];
  // every backend becomes plain softmax attention.
  ox::Value to_onnx(ox::Graph& g, const ox::Value& x);
  // forward_cross() for one jet: queries x [Lq, D], keys/values kv [Lk, D], allowed
  // bool [Lq, Lk] (true = may attend; empty: all); every query needs an allowed key.
  ox::Value cross_to_onnx(ox::Graph& g, const ox::Value& x, const ox::Value& kv, const ox::Value& allowed = {});
  void reset_parameters();
  // Switch the kernel (salt's set_backend); throws UsageError for an unknown name.
  void set_backend(const std::string& attn_type);
  const std::string& attn_type() const { return options_.attn_type(); }

  torch::Tensor in_proj_weight, in_proj_bias;
  torch::nn::Linear out_proj{nullptr};
  Norm q_norm{nullptr}, k_norm{nullptr}, v_norm{nullptr};

 private:
  // forward_packed's attention proper: projected q, k, v [N, 3D] -> [N, D], by the
  // first kernel that applies.
  torch::Tensor attend_packed(const torch::Tensor& projected, const TokenLayout& layout);
  // Projected q, k, v [L, D] -> heads, softmax attention (masked by `allowed`), out_proj.
  ox::Value attend_onnx(ox::Graph& g, const ox::Value& q, const ox::Value& k, const ox::Value& v,
                        const ox::Value& allowed);
  AttentionOptions options_;
  int64_t head_dim_;
};
TORCH_MODULE(Attention);

}  // namespace salt::models
