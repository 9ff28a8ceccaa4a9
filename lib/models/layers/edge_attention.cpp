#include "models/layers/edge_attention.h"

#include <limits>

#include "core/errors.h"
#include "export/graph.h"
#include "export/layers.h"

namespace salt::models {

EdgeAttentionImpl::EdgeAttentionImpl(const EdgeAttentionOptions& options)
    : torch::nn::Module("EdgeAttention"), options_(options) {
  const auto& a = options.attn();
  const int64_t d = a.embed_dim(), h = a.num_heads(), e = options.edge_embed_dim();
  if (h <= 0 || d % h != 0)
    throw UsageError("EdgeAttention: embed_dim " + std::to_string(d) + " is not divisible by num_heads " + std::to_string(h));
  if (e <= 0) throw UsageError("EdgeAttention: edge_embed_dim must be positive");
  head_dim_ = d / h;
  if (a.do_qk_norm()) {
    q_norm = register_module("q_norm", Norm("RMSNorm", head_dim_));
    k_norm = register_module("k_norm", Norm("RMSNorm", head_dim_));
  }
  if (a.do_v_norm()) v_norm = register_module("v_norm", Norm("RMSNorm", head_dim_));
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * d, d}));
  if (a.bias()) in_proj_bias = register_parameter("in_proj_bias", torch::empty({3 * d}));
  auto linear = [&](int64_t in, int64_t out) { return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(a.bias())); };
  out_proj = register_module("out_proj", linear(d, d));
  linear_e = register_module("linear_e", linear(e, h));
  linear_g = register_module("linear_g", linear(e, h));
  if (options.update_edges()) linear_e_out = register_module("linear_e_out", linear(h, e));
  reset_parameters();
}

void EdgeAttentionImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  if (options_.attn().mup()) {
    // salt's muP init; out_proj keeps its default weights (salt re-draws only the rest).
    const int64_t d = in_proj_weight.size(1);
    in_proj_weight.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(head_dim_)));
    in_proj_weight.narrow(0, 0, d).zero_();
    std::vector<torch::nn::Linear> layers = {out_proj, linear_e, linear_g};
    if (linear_e_out) layers.push_back(linear_e_out);
    for (size_t i = 1; i < layers.size(); ++i)  // N(0, 1 / fan-in)
      layers[i]->weight.normal_(0.0, std::sqrt(1.0 / static_cast<double>(layers[i]->weight.size(1))));
    if (in_proj_bias.defined()) in_proj_bias.zero_();
    for (auto& l : layers)
      if (l->bias.defined()) l->bias.zero_();
    return;
  }
  torch::nn::init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) in_proj_bias.zero_();
  std::vector<torch::nn::Linear> layers = {linear_e, linear_g, out_proj};  // salt's order
  if (linear_e_out) layers.push_back(linear_e_out);
  for (auto& l : layers) {
    l->reset_parameters();
    if (l->bias.defined()) l->bias.zero_();
  }
}

std::pair<torch::Tensor, torch::Tensor> EdgeAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& edges,
                                                                   const torch::Tensor& pad_mask) {
  const int64_t b = x.size(0), l = x.size(1), d = x.size(2), h = options_.attn().num_heads();
  auto qkv = torch::nn::functional::linear(x, in_proj_weight, in_proj_bias).view({b, l, 3, h, head_dim_}).permute({2, 0, 3, 1, 4});
  auto q = qkv[0], k = qkv[1], v = qkv[2];  // [B, H, L, Dh]
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  if (v_norm) v = v_norm->forward(v);
  auto bias = linear_e->forward(edges).permute({0, 3, 1, 2});                 // [B, H, L, L]
  auto gate = torch::sigmoid(linear_g->forward(edges)).permute({0, 3, 1, 2});  // [B, H, L, L]
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * attention_scale(head_dim_, options_.attn().mup()) + bias;
  if (options_.attn().dropout() > 0 && is_training()) scores = torch::dropout(scores, options_.attn().dropout(), true);
  auto edges_out = linear_e_out ? linear_e_out->forward(scores.permute({0, 2, 3, 1})) : edges;
  if (pad_mask.defined())
    scores = scores.masked_fill(pad_mask.view({b, 1, 1, l}), -std::numeric_limits<float>::infinity());
  auto weights = torch::softmax(scores, -1) * gate;
  auto out = torch::matmul(weights, v).transpose(1, 2).reshape({b, l, d});
  return {out_proj->forward(out), edges_out};
}

std::pair<ox::Value, ox::Value> EdgeAttentionImpl::to_onnx(ox::Graph& g, const ox::Value& x, const ox::Value& edges) {
  const int64_t d = options_.attn().embed_dim(), h = options_.attn().num_heads();
  const std::vector<int64_t> heads_first{2, 0, 1}, heads_last{1, 2, 0};
  auto qkv = g.op_n("Split", {ox::linear(g, x, in_proj_weight, in_proj_bias)}, 3, {{"axis", int64_t{-1}}});
  auto q = split_heads_onnx(g, qkv[0], h, head_dim_), k = split_heads_onnx(g, qkv[1], h, head_dim_),
       v = split_heads_onnx(g, qkv[2], h, head_dim_);
  if (q_norm) {
    q = q_norm->to_onnx(g, q);
    k = k_norm->to_onnx(g, k);
  }
  if (v_norm) v = v_norm->to_onnx(g, v);
  auto bias = g.op("Transpose", {ox::linear_nd(g, edges, linear_e)}, {{"perm", heads_first}});  // [H, L, L]
  auto gate = g.op("Transpose", {g.op("Sigmoid", {ox::linear_nd(g, edges, linear_g)})}, {{"perm", heads_first}});
  auto kt = g.op("Transpose", {k}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  auto scale = g.scalar(float(attention_scale(head_dim_, options_.attn().mup())));
  auto scores = g.op("Add", {g.op("Mul", {g.op("MatMul", {q, kt}), scale}), bias});
  ox::Value edges_out = edges;
  if (linear_e_out) edges_out = ox::linear_nd(g, g.op("Transpose", {scores}, {{"perm", heads_last}}), linear_e_out);
  auto weights = g.op("Mul", {g.op("Softmax", {scores}, {{"axis", int64_t{-1}}}), gate});
  auto out = g.op("MatMul", {weights, v});  // [H, L, Dh]
  return {ox::linear(g, merge_heads_onnx(g, out, d), out_proj), edges_out};
}

}  // namespace salt::models
