// Behaviour of the whole model: padding never matters, valid tracks are a set,
// empty jets are finite, registers are pooled, gradients flow.
#include <gtest/gtest.h>

#include "models/layers/pooling.h"
#include "models/model_test_helpers.h"

using namespace salt::models;
using namespace salt::models::testing;

namespace {

struct Fixture {
  SaltWrapper model{nullptr};
  Fixture(int registers = 1) {
    model = build(small_gn2_yaml(registers), make_context(2, 19));
    model->eval();
  }
};

void expect_close(const torch::Tensor& a, const torch::Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.sizes(), b.sizes());
  EXPECT_TRUE(torch::allclose(a, b, tol, tol)) << "max diff " << (a - b).abs().max().item<double>();
}

}  // namespace

TEST(Invariance, PaddedInputsChangeNothing) {
  Fixture f;
  auto batch = toy_batch({5, 3, 0, 8}, 8);
  auto a = f.model->forward(batch.inputs, batch.pad_masks, &batch.labels);

  auto changed = batch;
  auto mask = batch.pad_masks["tracks"];
  changed.inputs["tracks"] = batch.inputs["tracks"].masked_fill(mask.unsqueeze(-1), 7.5) +
                             torch::randn_like(batch.inputs["tracks"]) * mask.unsqueeze(-1);
  changed.labels["tracks"]["ftagTruthOriginLabel"] = batch.labels["tracks"]["ftagTruthOriginLabel"].masked_fill(mask, 3);
  changed.labels["tracks"]["ftagTruthVertexIndex"] = batch.labels["tracks"]["ftagTruthVertexIndex"].masked_fill(mask, 0);
  auto b = f.model->forward(changed.inputs, changed.pad_masks, &changed.labels);

  expect_close(a.preds["jets"]["jets_classification"], b.preds["jets"]["jets_classification"]);
  auto valid = mask.logical_not().unsqueeze(-1);
  expect_close(a.preds["tracks"]["track_origin"].masked_select(valid), b.preds["tracks"]["track_origin"].masked_select(valid));
  expect_close(a.preds["tracks"]["track_vertexing"], b.preds["tracks"]["track_vertexing"]);
  for (const auto& [task, loss] : a.losses) expect_close(loss, b.losses[task]);
  expect_close(a.loss, b.loss);
}

TEST(Invariance, PermutingValidTracks) {
  Fixture f;
  auto batch = toy_batch({5, 4}, 6);
  auto a = f.model->forward(batch.inputs, batch.pad_masks, &batch.labels);

  // Permute the 5 valid tracks of jet 0 (inputs and labels alike).
  auto perm = torch::tensor({3, 0, 4, 1, 2, 5}, torch::kLong);
  auto permuted = batch;
  auto permute_row0 = [&](const torch::Tensor& t) {
    auto out = t.clone();
    out[0] = t[0].index_select(0, perm);
    return out;
  };
  permuted.inputs["tracks"] = permute_row0(batch.inputs["tracks"]);
  for (auto& [name, t] : permuted.labels["tracks"]) t = permute_row0(batch.labels["tracks"][name]);
  auto b = f.model->forward(permuted.inputs, permuted.pad_masks, &permuted.labels);

  expect_close(a.preds["jets"]["jets_classification"], b.preds["jets"]["jets_classification"]);
  expect_close(permute_row0(a.preds["tracks"]["track_origin"]).narrow(1, 0, 4),
               b.preds["tracks"]["track_origin"].narrow(1, 0, 4));
  for (const auto& [task, loss] : a.losses) expect_close(loss, b.losses[task]);

  // Edge logits: edge (i, j) of the original is edge (inv[i], inv[j]) after permuting.
  auto edges_a = a.preds["tracks"]["track_vertexing"], edges_b = b.preds["tracks"]["track_vertexing"];
  auto index = [](int64_t i, int64_t j, int64_t n) { return i * (n - 1) + (j < i ? j : j - 1); };
  std::vector<int64_t> inv(5);
  for (int64_t k = 0; k < 5; ++k) inv[perm[k].item<int64_t>()] = k;
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 5; ++j)
      if (i != j)
        EXPECT_NEAR(edges_a[index(i, j, 5)].item<float>(), edges_b[index(inv[i], inv[j], 5)].item<float>(), 1e-5);
}

TEST(Invariance, AllPaddedJetIsFinite) {
  for (const char* yaml : {"gn2", "dips"}) {
    SaltWrapper model{nullptr};
    if (std::string(yaml) == "gn2") {
      model = build(small_gn2_yaml(), make_context(2, 19));
    } else {
      auto ctx = make_context(2, 21, "dips");
      model = build(kDIPSYaml, ctx);
    }
    model->train();
    auto batch = toy_batch({0, 0, 2}, 5, 2, std::string(yaml) == "gn2" ? 19 : 21);
    batch.labels["jets"]["HadronConeExclTruthLabelID"] = torch::tensor({0, 4, 5}, torch::kLong);
    auto out = model->forward(batch.inputs, batch.pad_masks, &batch.labels);
    for (const auto& [input, tasks] : out.preds)
      for (const auto& [task, p] : tasks) EXPECT_TRUE(torch::isfinite(p).all().item<bool>()) << yaml << " " << task;
    EXPECT_TRUE(torch::isfinite(out.global_rep).all().item<bool>()) << yaml;
    ASSERT_TRUE(out.loss.defined());
    EXPECT_TRUE(torch::isfinite(out.loss).item<bool>()) << yaml;
    out.loss.backward();
    for (const auto& p : model->named_parameters())
      if (p.value().grad().defined())
        EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>()) << yaml << " " << p.key();
    if (std::string(yaml) == "dips") {
      // No registers: an empty jet pools to exactly zero.
      EXPECT_EQ(out.global_rep[0].abs().max().item<float>(), 0.0f);
    }
  }
}

TEST(Invariance, RegistersTakePartInPooling) {
  Fixture f(2);
  auto batch = toy_batch({3, 0}, 4);
  auto out = f.model->forward(batch.inputs, batch.pad_masks);
  ASSERT_EQ(out.sequence.segments.back().name, "REGISTERS");
  ASSERT_EQ(out.sequence.x.size(1), 4 + 2);
  auto w = f.model->model->pool_net->as<GlobalAttentionPooling>()->weights(out.sequence.x, out.sequence.mask());
  EXPECT_GT(w[0].narrow(0, 4, 2).sum().item<float>(), 0.0f);
  EXPECT_NEAR(w[1].narrow(0, 4, 2).sum().item<float>(), 1.0f, 1e-6);  // only registers are valid
  EXPECT_EQ(w[0].narrow(0, 3, 1).item<float>(), 0.0f);                  // the padded track gets nothing

  // Changing the registers changes the jet output.
  auto before = out.preds["jets"]["jets_classification"].clone();
  {
    torch::NoGradGuard ng;
    f.model->model->encoder->registers.add_(1.0);
  }
  auto after = f.model->forward(batch.inputs, batch.pad_masks).preds["jets"]["jets_classification"];
  EXPECT_FALSE(torch::allclose(before, after));
}

TEST(Invariance, DropRegistersRemovesThem) {
  auto y = small_gn2_yaml(2);
  y.replace(y.find("num_registers: 2"), 16, "num_registers: 2\n      drop_registers: true");
  auto model = build(y, make_context(2, 19));
  auto batch = toy_batch({3, 1}, 4);
  auto out = model->forward(batch.inputs, batch.pad_masks);
  EXPECT_EQ(out.sequence.x.size(1), 4);
  EXPECT_EQ(out.sequence.segments.size(), 1u);
}

TEST(Gradients, FlowToEveryParameter) {
  Fixture f;
  f.model->train();
  auto batch = toy_batch({5, 3, 6}, 6);
  auto out = f.model->forward(batch.inputs, batch.pad_masks, &batch.labels);
  ASSERT_EQ(out.losses.size(), 3u);
  out.loss.backward();
  for (const auto& p : f.model->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>()) << p.key();
    // The attention pool's gate bias shifts every track's logit alike and the softmax
    // over tracks ignores a shift: its gradient is 0 analytically (rounding leaves
    // ~1e-9, or exactly 0 in ~2% of random initialisations).
    if (p.key() == "model.pool_net.gate_nn.bias") continue;
    EXPECT_GT(p.value().grad().abs().sum().item<float>(), 0.0f) << p.key();
  }
}

TEST(Inference, OutputsAndColumnNames) {
  Fixture f;
  auto batch = toy_batch({3, 0, 4}, 4);
  auto out = f.model->forward(batch.inputs, batch.pad_masks);
  EXPECT_FALSE(out.loss.defined());
  EXPECT_TRUE(out.losses.empty());
  auto cols = f.model->predictions(out, batch.pad_masks);

  const auto& jets = cols["jets"]["jets_classification"];
  EXPECT_EQ(jets.names, (std::vector<std::string>{"GN2_pb", "GN2_pc", "GN2_pu", "GN2_ptau"}));
  expect_close(jets.values.sum(-1), torch::ones({3}));

  const auto& origin = cols["tracks"]["track_origin"];
  EXPECT_EQ(origin.names.front(), "GN2_pPileup");
  EXPECT_EQ(origin.names.back(), "GN2_pOtherSecondary");
  auto sums = origin.values.sum(-1);
  auto mask = batch.pad_masks["tracks"];
  expect_close(sums.masked_select(mask.logical_not()), torch::ones({7}));
  EXPECT_EQ(sums.masked_select(mask).abs().sum().item<float>(), 0.0f);

  const auto& vtx = cols["tracks"]["track_vertexing"];
  EXPECT_EQ(vtx.names, std::vector<std::string>{"VertexIndex"});
  EXPECT_EQ(vtx.values.sizes(), (std::vector<int64_t>{3, 4, 1}));
  EXPECT_EQ(vtx.values.scalar_type(), torch::kLong);
  EXPECT_TRUE((vtx.values.squeeze(-1).masked_select(mask) == -1).all().item<bool>());
  auto valid_idx = vtx.values.squeeze(-1).masked_select(mask.logical_not());
  EXPECT_TRUE((valid_idx >= 0).all().item<bool>());

  auto required = f.model->required_labels();
  EXPECT_EQ(required["jets"], std::vector<std::string>{"flavour_label"});
  EXPECT_EQ(required["tracks"], (std::vector<std::string>{"ftagTruthOriginLabel", "ftagTruthVertexIndex"}));
}
