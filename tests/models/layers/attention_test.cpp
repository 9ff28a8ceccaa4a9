// The attention kernels agree with a straightforward per-(jet, head, query)
// reference, and padded tokens never send information.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/errors.h"
#include "core/torch_compat.h"
#include "models/layers/attention.h"
#include "models/layers/transformer.h"

using namespace salt::models;

namespace {

// Loops over jets, heads and queries; softmax over the valid keys only, in double.
torch::Tensor reference_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                  const torch::Tensor& pad_mask) {
  const auto b = q.size(0), h = q.size(1), l = q.size(2), dh = q.size(3);
  auto qd = q.to(torch::kDouble), kd = k.to(torch::kDouble), vd = v.to(torch::kDouble);
  auto out = torch::zeros({b, h, l, dh}, torch::kDouble);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t i = 0; i < l; ++i) {
        std::vector<double> s;
        std::vector<int64_t> keys;
        for (int64_t j = 0; j < l; ++j) {
          if (pad_mask[bi][j].item<bool>()) continue;
          keys.push_back(j);
          s.push_back((qd[bi][hi][i] * kd[bi][hi][j]).sum().item<double>() / std::sqrt(double(dh)));
        }
        double mx = -1e300, z = 0;
        for (double x : s) mx = std::max(mx, x);
        for (double& x : s) z += (x = std::exp(x - mx));
        for (size_t n = 0; n < keys.size(); ++n) out[bi][hi][i] += s[n] / z * vd[bi][hi][keys[n]];
      }
  return out.to(torch::kFloat);
}

torch::Tensor mask_of(const std::vector<int64_t>& valid, int64_t l) {
  auto m = torch::ones({static_cast<int64_t>(valid.size()), l}, torch::kBool);
  for (size_t i = 0; i < valid.size(); ++i) m[i].narrow(0, 0, valid[i]).fill_(false);
  return m;
}

}  // namespace

TEST(Attention, ExplicitKernelMatchesReference) {
  torch::manual_seed(3);
  auto q = torch::randn({3, 2, 5, 4}), k = torch::randn({3, 2, 5, 4}), v = torch::randn({3, 2, 5, 4});
  auto mask = mask_of({5, 2, 1}, 5);
  auto got = attention_explicit(q, k, v, mask.logical_not().view({3, 1, 1, 5}), 0.0, 0.5);
  EXPECT_TRUE(torch::allclose(got, reference_attention(q, k, v, mask), 1e-5, 1e-5));
}

TEST(Attention, ModuleMatchesReferenceForEveryBackend) {
  torch::manual_seed(4);
  Attention attn(AttentionOptions(8).num_heads(2).attn_type("torch-math"));
  attn->eval();
  auto x = torch::randn({3, 6, 8});
  auto mask = mask_of({6, 3, 1}, 6);

  // Reference from the module's own parameters: packed projection, per-head loops, out_proj.
  auto qkv = torch::matmul(x, attn->in_proj_weight.t()) + attn->in_proj_bias;
  auto parts = qkv.chunk(3, -1);
  auto heads = [](const torch::Tensor& t) { return t.view({3, 6, 2, 4}).transpose(1, 2); };
  auto ref = reference_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), mask);
  ref = attn->out_proj->forward(ref.transpose(1, 2).reshape({3, 6, 8}));

  for (const char* type : {"torch-math", "torch-flash", "torch-meff", "flash-varlen"}) {
    attn->set_backend(type);
    auto got = attn->forward(x, mask);
    // Padded queries receive attention too, so every position is compared.
    EXPECT_TRUE(torch::allclose(got, ref, 1e-5, 1e-5)) << type << " max diff " << (got - ref).abs().max().item<double>();
  }
}

TEST(Attention, FusedKernelAgreesWithExplicit) {
  if (!salt::compat::kHasFusedAttention) GTEST_SKIP() << "LibTorch " << salt::compat::torch_version() << " has no fused SDPA";
  // Outputs and gradients (inputs and weights), with padding, a jet whose only valid
  // token is the first, and an all-padded jet (finite, never NaN).
  auto mask = mask_of({10, 4, 1, 0}, 10);
  for (const std::string fused : {"torch-flash", "torch-meff", "flash-varlen"}) {
    SCOPED_TRACE(fused);
    EXPECT_TRUE(attn_type_uses_fused_kernel(fused));
    auto run = [&](const std::string& attn_type) {
      torch::manual_seed(5);
      Attention attn(AttentionOptions(16).num_heads(4).attn_type(attn_type));
      auto x = torch::randn({4, 10, 16}).requires_grad_(true);
      auto out = attn->forward(x, mask);
      // Only valid positions feed the loss, as in the model.
      (out * mask.logical_not().unsqueeze(-1)).pow(2).sum().backward();
      return std::vector<torch::Tensor>{out.detach(), x.grad(), attn->in_proj_weight.grad()};
    };
    const auto explicit_run = run("torch-math"), fused_run = run(fused);
    EXPECT_TRUE(torch::isfinite(fused_run[0]).all().item<bool>());
    const auto valid = mask.logical_not().unsqueeze(-1);
    EXPECT_TRUE(torch::allclose(fused_run[0].masked_select(valid), explicit_run[0].masked_select(valid), 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(fused_run[1].masked_select(valid), explicit_run[1].masked_select(valid), 1e-4, 1e-5));
    EXPECT_TRUE(torch::allclose(fused_run[2], explicit_run[2], 1e-4, 1e-5))
        << "max diff " << (fused_run[2] - explicit_run[2]).abs().max().item<double>();
  }
}

TEST(Attention, PaddedTokensNeverSend) {
  torch::manual_seed(6);
  Attention attn(AttentionOptions(8).num_heads(2));
  attn->eval();
  auto x = torch::randn({2, 5, 8});
  auto mask = mask_of({3, 5}, 5);
  auto a = attn->forward(x, mask);
  auto y = x.clone();
  y[0].narrow(0, 3, 2).normal_();  // change jet 0's padded tokens
  auto b = attn->forward(y, mask);
  EXPECT_TRUE(torch::allclose(a[0].narrow(0, 0, 3), b[0].narrow(0, 0, 3)));
  EXPECT_TRUE(torch::allclose(a[1], b[1]));
  // A query with no valid key (impossible with registers) gives finite output.
  auto empty = attn->forward(x, torch::ones({2, 5}, torch::kBool));
  EXPECT_TRUE(torch::isfinite(empty).all().item<bool>());
}

TEST(Attention, RejectsBadSettings) {
  EXPECT_THROW(Attention(AttentionOptions(10).num_heads(3)), salt::UsageError);
  EXPECT_THROW(Attention(AttentionOptions(8).attn_type("flash")), salt::UsageError);
  EXPECT_THROW(Transformer(TransformerOptions(1, 8).num_registers(0)), salt::UsageError);
}

TEST(Transformer, PostNormLayerScaleAndGatedGLU) {
  torch::manual_seed(7);
  auto opts = TransformerOptions(2, 8)
                  .norm_type("post")
                  .ls_init(0.1)
                  .norm("RMSNorm")
                  .dense_kwargs(GLUOptions().gated(true).hidden_dim(12))
                  .attn_kwargs(AttentionOptions(0).num_heads(2).do_qk_norm(true));
  Transformer t(opts);
  std::set<std::string> keys;
  for (const auto& p : t->named_parameters()) keys.insert(p.key());
  EXPECT_TRUE(keys.count("layers.0.attn.ls.gamma"));
  EXPECT_TRUE(keys.count("layers.0.attn.norm.weight"));  // RMSNorm has a weight
  EXPECT_TRUE(keys.count("layers.0.attn.fn.q_norm.weight"));
  EXPECT_EQ(t->named_parameters()["layers.0.dense.fn.in_proj.weight"].size(0), 24);  // gated: 2 x hidden
  Sequence s{torch::randn({2, 3, 8}), {{"tracks", mask_of({3, 1}, 3)}}};
  auto out = t->forward(s);
  EXPECT_EQ(out.x.sizes(), (std::vector<int64_t>{2, 4, 8}));
  EXPECT_TRUE(torch::isfinite(out.x).all().item<bool>());
}
