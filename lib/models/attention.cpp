#include "models/attention.h"

#include <cmath>

#include "core/errors.h"
#include "core/torch_compat.h"

namespace salt::models {

bool is_valid_attn_type(const std::string& t) {
  return t == "torch-math" || t == "torch-flash" || t == "torch-meff" || t == "flash-varlen";
}

bool attn_type_uses_fused_kernel(const std::string& t) { return compat::kHasFusedAttention && t != "torch-math"; }

torch::Tensor attention_explicit(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 const torch::Tensor& key_allowed, double dropout_p, double scale) {
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * scale;
  if (key_allowed.defined()) scores = scores.masked_fill(key_allowed.logical_not(), -std::numeric_limits<float>::infinity());
  auto weights = torch::softmax(scores, -1);
  if (key_allowed.defined()) {
    // A query with no allowed key (only possible without registers) would be NaN.
    auto any = key_allowed.any(-1, /*keepdim=*/true);
    weights = weights.masked_fill(any.logical_not(), 0.0);
  }
  if (dropout_p > 0) weights = torch::dropout(weights, dropout_p, /*train=*/true);
  return torch::matmul(weights, v);
}

torch::Tensor attention_key_padded(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   const torch::Tensor& key_pad, double dropout_p, double scale) {
  const int64_t b = q.size(0), h = q.size(1), lq = q.size(2), lk = k.size(2), dh = q.size(3);
  auto bias = torch::zeros({b, 1, 1, lk}, q.options())
                  .masked_fill_(key_pad.view({b, 1, 1, lk}), -std::numeric_limits<float>::infinity())
                  .expand({b, h, 1, lk})
                  .reshape({b * h, 1, lk});
  auto scores = torch::baddbmm(bias, q.reshape({b * h, lq, dh}), k.reshape({b * h, lk, dh}).transpose(1, 2),
                               /*beta=*/1.0, /*alpha=*/scale);
  auto weights = torch::softmax(scores, -1);
  if (dropout_p > 0) weights = torch::dropout(weights, dropout_p, /*train=*/true);
  return torch::bmm(weights, v.reshape({b * h, lk, dh})).view({b, h, lq, dh});
}

AttentionImpl::AttentionImpl(const AttentionOptions& options) : torch::nn::Module("Attention"), options_(options) {
  const auto d = options.embed_dim();
  if (options.num_heads() <= 0 || d % options.num_heads() != 0)
    throw UsageError("Attention: embed_dim " + std::to_string(d) + " is not divisible by num_heads " +
                     std::to_string(options.num_heads()));
  set_backend(options.attn_type());
  head_dim_ = d / options.num_heads();
  if (options.do_qk_norm()) {
    q_norm = register_module("q_norm", Norm("RMSNorm", head_dim_));
    k_norm = register_module("k_norm", Norm("RMSNorm", head_dim_));
  }
  if (options.do_v_norm()) v_norm = register_module("v_norm", Norm("RMSNorm", head_dim_));
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * d, d}));
  if (options.bias()) in_proj_bias = register_parameter("in_proj_bias", torch::empty({3 * d}));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(options.bias())));
  reset_parameters();
}

void AttentionImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) in_proj_bias.zero_();
  out_proj->reset_parameters();
}

void AttentionImpl::set_backend(const std::string& attn_type) {
  if (!is_valid_attn_type(attn_type))
    throw UsageError("Attention: unknown attn_type '" + attn_type +
                     "' (choose from torch-math, torch-flash, torch-meff, flash-varlen)");
  options_.attn_type(attn_type);
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& pad_mask) {
  const auto b = x.size(0), l = x.size(1), d = x.size(2);
  auto qkv = torch::nn::functional::linear(x, in_proj_weight, in_proj_bias).chunk(3, -1);
  auto heads = [&](const torch::Tensor& t) { return t.view({b, l, options_.num_heads(), head_dim_}).transpose(1, 2); };
  auto q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  if (v_norm) v = v_norm->forward(v);

  // [B, 1, 1, L]: whether each key (sender) is a real token.
  torch::Tensor allowed;
  if (pad_mask.defined()) allowed = pad_mask.logical_not().view({b, 1, 1, l});
  const double dropout = is_training() ? options_.dropout() : 0.0;
  torch::Tensor out;
#if SALT_TORCH_AT_LEAST(2, 0)
  if (attn_type_uses_fused_kernel(options_.attn_type()))
    out = compat::fused_attention(q.contiguous(), k.contiguous(), v.contiguous(),
                                  allowed.defined() ? allowed.expand({b, 1, l, l}) : allowed, dropout);
#endif
  if (!out.defined()) out = attention_explicit(q, k, v, allowed, dropout, 1.0 / std::sqrt(double(head_dim_)));
  return out_proj->forward(out.transpose(1, 2).reshape({b, l, d}));
}

torch::Tensor AttentionImpl::forward_packed(const torch::Tensor& x, const TokenLayout& layout) {
  const int64_t b = layout.batch, l = layout.length, d = x.size(1), h = options_.num_heads();
  // One fused projection on the packed tokens, then [B, Lc, 3, H, Dh] -> q, k, v [B, H, Lc, Dh].
  auto qkv = layout.scatter(torch::nn::functional::linear(x, in_proj_weight, in_proj_bias))
                 .view({b, l, 3, h, head_dim_})
                 .permute({2, 0, 3, 1, 4});
  auto q = qkv[0], k = qkv[1], v = qkv[2];
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  if (v_norm) v = v_norm->forward(v);
  const double dropout = is_training() ? options_.dropout() : 0.0;
  torch::Tensor out;
#if SALT_TORCH_AT_LEAST(2, 0)
  if (attn_type_uses_fused_kernel(options_.attn_type()))
    out = compat::fused_attention(q.contiguous(), k.contiguous(), v.contiguous(),
                                  layout.pad_mask.logical_not().view({b, 1, 1, l}).expand({b, 1, l, l}), dropout);
#endif
  if (!out.defined())
    out = attention_key_padded(q, k, v, layout.pad_mask, dropout, 1.0 / std::sqrt(double(head_dim_)));
  return out_proj->forward(layout.gather(out.transpose(1, 2).reshape({b * l, d})));
}

}  // namespace salt::models
