// GN3's encoder blocks against values computed independently with Python's torch
// 1.13 from salt's definitions: tests/models/reference/encoder_blocks_reference.py
// prints every expected array below.
#include <gtest/gtest.h>

#include <cmath>

#include "models/layers/norm.h"
#include "models/layers/residual.h"
#include "models/layers/transformer.h"
#include "models/model_test_helpers.h"

using namespace salt::models;

namespace {

void expect_values(const torch::Tensor& actual, const std::vector<float>& expected, double tol, const std::string& what) {
  auto flat = actual.detach().contiguous().view(-1);
  ASSERT_EQ(flat.numel(), static_cast<int64_t>(expected.size())) << what;
  for (int64_t i = 0; i < flat.numel(); ++i)
    EXPECT_NEAR(flat[i].item<float>(), expected[i], tol) << what << " [" << i << "]";
}

EncoderLayer hybrid_layer(int64_t depth) {
  return EncoderLayer(EncoderLayerOptions(4)
                          .depth(depth)
                          .norm_type("hybrid")
                          .residual(ResidualOptions().norm("RMSNorm").ls_init(0.5))
                          .attn(AttentionOptions(4).num_heads(2).attn_type("torch-math"))
                          .dense(GLUOptions().embed_dim(4).activation("SiLU").gated(true)));
}

}  // namespace

TEST(EncoderBlocks, RMSNormMatchesSaltsDefinition) {
  Norm norm("RMSNorm", 4);
  {
    torch::NoGradGuard no_grad;
    norm->weight.copy_(torch::tensor({1.0f, 0.5f, 2.0f, -1.0f}));
  }
  auto out = norm->forward(torch::linspace(-1.5, 2.0, 24).view({2, 3, 4}));
  expect_values(out, {-1.169068f, -0.5252336f, -1.863732f, 0.8132648f, -1.302066f, -0.5398809f, -1.714916f, 0.6351539f,
                      -1.582062f, -0.3650913f, 0.2433934f, -0.9735759f, 0.5623378f, 0.4123811f, 2.174373f, -1.349611f,
                      0.7952713f, 0.4623671f, 2.108394f, -1.18366f, 0.8671752f, 0.4763357f, 2.076335f, -1.123664f},
                1e-5, "RMSNorm");
  // Normalised in float32, cast back, then times the float32 weight: a bf16 input
  // comes out float32 outside autocast, as salt's `output.type_as(x) * self.weight`.
  EXPECT_EQ(norm->forward(torch::ones({2, 4}, torch::kBFloat16)).scalar_type(), torch::kFloat32);
}

TEST(EncoderBlocks, DropPathDrawsAsSaltPerJet) {
  auto x = torch::arange(12.0f).view({3, 2, 2});
  torch::manual_seed(7);  // the same generator stream as Python's torch.manual_seed(7)
  expect_values(drop_path(x, 0.5, true), {0, 2, 4, 6, 0, 0, 0, 0, 16, 18, 20, 22}, 0, "drop_path");
  EXPECT_TRUE(torch::equal(drop_path(x, 0.5, false), x));  // identity in evaluation
  // Packed tokens: every token of a jet shares its jet's draw.
  torch::manual_seed(7);
  auto jet = torch::tensor({0, 0, 1, 2, 2}, torch::kLong);
  auto tokens = drop_path_tokens(torch::ones({5, 2}), 0.5, true, jet, 3);
  expect_values(tokens, {2, 2, 2, 2, 0, 0, 2, 2, 2, 2}, 0, "drop_path_tokens");
}

TEST(EncoderBlocks, HybridLayersMatchSalt) {
  const std::vector<std::vector<float>> expected = {
      {-1.035473f, -0.7008669f, -0.5461017f, -0.3266923f, -0.2357194f, 0.09960382f, 0.2525802f, 0.470581f},
      {-0.07766074f, 0.1201779f, 0.2500371f, 0.226923f, -0.04530719f, -0.07961376f, -0.2131211f, -0.357358f}};
  auto x = torch::linspace(-1.0, 1.2, 12).view({1, 3, 4});
  auto pad = torch::tensor({false, false, true}).view({1, 3});
  for (int64_t depth : {0, 1}) {
    auto layer = hybrid_layer(depth);
    salt::models::testing::fill_by_name(*layer);
    layer->eval();
    auto name = "hybrid depth " + std::to_string(depth);
    expect_values(layer->forward(x, pad).index({0, torch::indexing::Slice(0, 2)}), expected[depth], 1e-5, name);
    // The packed path (what the Transformer runs) gives the same tokens.
    PackedSequence seq = PackedSequence::pack(Sequence{x, {{"tracks", pad}}});
    expect_values(layer->forward_packed(seq.x, TokenLayout::of(seq)), expected[depth], 1e-5, name + " packed");
  }
}

TEST(EncoderBlocks, HybridLayoutAndStateDictNamesFollowSalt) {
  auto names = [](const torch::nn::Module& m) {
    std::set<std::string> out;
    for (const auto& p : m.named_parameters()) out.insert(p.key());
    return out;
  };
  auto first = names(*hybrid_layer(0)), deeper = names(*hybrid_layer(1));
  // Layer 0 is pre-norm with an identity `norm`; deeper layers have none in the residuals.
  EXPECT_TRUE(first.count("attn.norm.weight") && first.count("dense.norm.weight"));
  EXPECT_FALSE(first.count("norm.weight"));
  EXPECT_TRUE(deeper.count("norm.weight"));
  EXPECT_FALSE(deeper.count("attn.norm.weight") || deeper.count("dense.norm.weight"));
  for (const auto& set : {first, deeper})
    for (const char* k : {"attn.fn.q_norm.weight", "attn.fn.k_norm.weight", "attn.fn.v_norm.weight", "attn.ls.gamma"})
      EXPECT_TRUE(set.count(k)) << k;
  // num_dense > 1: salt's nn.Sequential names dense.0, dense.1, ...
  EncoderLayer two(EncoderLayerOptions(4).num_dense(2).attn(AttentionOptions(4)).dense(GLUOptions().embed_dim(4)));
  auto two_names = names(*two);
  EXPECT_TRUE(two_names.count("dense.0.fn.in_proj.weight") && two_names.count("dense.1.fn.out_proj.bias"));
}
