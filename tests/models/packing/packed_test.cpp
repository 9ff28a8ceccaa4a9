// The packed fast path (valid tokens only, varlen attention, split first layers)
// equals the straightforward padded computation: outputs, losses and gradients,
// for jets with varied valid counts, non-prefix masks and all-padded jets.
#include <gtest/gtest.h>

#include "core/torch_compat.h"
#include "models/layers/attention.h"
#include "models/layers/transformer.h"
#include "models/layers/pooling.h"
#include "models/model_test_helpers.h"
#include "models/tasks/classification_task.h"
#include "models/tasks/vertexing_task.h"

using namespace salt::models;
using namespace salt::models::testing;

namespace {

struct Reference {
  torch::Tensor jet_logits, origin_logits, edge_logits, loss;
};

// GN2 the padded way: every layer on [B, L, D], explicit masked attention, edge
// features cat([context, x_i, x_j]) built per edge — what salt does.
Reference padded_reference(SaltWrapper& wrapper, const ToyBatch& t) {
  auto& m = wrapper->model;
  auto inputs = wrapper->norm->forward(t.inputs);
  const auto& mask = t.pad_masks.at("tracks");
  auto init_net = m->init_net_list().front();
  auto x = init_net->forward(inputs);
  const int64_t b = x.size(0), l = x.size(1), r = m->encoder->options().num_registers();
  x = torch::cat({x, m->encoder->registers.unsqueeze(0).expand({b, r, x.size(2)})}, 1);
  auto full_mask = torch::cat({mask, torch::zeros({b, r}, torch::kBool)}, 1);
  for (size_t i = 0; i < m->encoder->layers->size(); ++i)
    x = m->encoder->layers->ptr<EncoderLayerImpl>(i)->forward(x, full_mask);
  x = m->encoder->out_norm->forward(m->encoder->out_proj->forward(x));
  auto pooled = m->pool_net->as<GlobalAttentionPooling>()->forward(x, full_mask);
  auto trk = x.narrow(1, 0, l);

  Reference ref;
  const auto& tasks = m->task_list();
  auto jets = tasks[0]->forward(pooled, {}, {}, &t.labels, {});
  auto origin = tasks[1]->forward(trk, mask, pooled, &t.labels, {});  // padded Dense with attach_context
  auto* vtx = dynamic_cast<VertexingTaskImpl*>(tasks[2].get());
  auto adjacency = edge_adjacency(mask, b, l);
  auto e = adjacency.nonzero();
  auto jet = e.select(1, 0), i = e.select(1, 1), j = e.select(1, 2);
  auto edges = torch::cat({trk.index({jet, i}), trk.index({jet, j})}, -1);
  ref.edge_logits = vtx->net->forward(edges, pooled.index_select(0, jet));
  auto vtx_loss = vtx->edge_loss(ref.edge_logits, t.labels.at("tracks").at("ftagTruthVertexIndex"),
                                 t.labels.at("tracks").at("ftagTruthOriginLabel"), adjacency) *
                  vtx->weight();
  ref.jet_logits = jets.preds;
  ref.origin_logits = origin.preds;
  ref.loss = jets.loss + origin.loss + vtx_loss;
  return ref;
}

std::map<std::string, torch::Tensor> grads(SaltWrapper& model, const torch::Tensor& loss) {
  model->zero_grad();
  loss.backward();
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : model->named_parameters())
    out[p.key()] = p.value().grad().defined() ? p.value().grad().clone() : torch::zeros_like(p.value());
  return out;
}

// Random pad masks (not only prefixes), with the given number of valid slots per jet.
ToyBatch shuffled_batch(const std::vector<int64_t>& n_valid, int64_t length, uint64_t seed) {
  auto t = toy_batch(n_valid, length, 2, 19, seed);
  auto mask = t.pad_masks["tracks"].clone();
  for (int64_t i = 0; i < mask.size(0); ++i) mask[i] = mask[i].index_select(0, torch::randperm(length));
  t.pad_masks["tracks"] = mask;
  t.inputs["tracks"] = t.inputs["tracks"].masked_fill(mask.unsqueeze(-1), 0.0);
  return t;
}

}  // namespace

TEST(Packed, ModelEqualsPaddedReference) {
  for (int registers : {1, 3}) {
    auto model = build(small_gn2_yaml(registers), make_context(2, 19));
    model->train();
    auto batch = shuffled_batch({0, 1, 5, 9, 3, 0, 9, 2}, 9, 11 + registers);
    const auto mask = batch.pad_masks["tracks"];

    auto out = model->forward(batch.inputs, batch.pad_masks, &batch.labels);
    auto ref = padded_reference(model, batch);
    const std::string tag = "registers " + std::to_string(registers);
    expect_close(out.preds["jets"]["jets_classification"], ref.jet_logits, 1e-5, tag + " jet logits");
    auto valid = mask.logical_not().unsqueeze(-1);
    expect_close(out.preds["tracks"]["track_origin"].masked_select(valid), ref.origin_logits.masked_select(valid), 1e-5,
                 tag + " origin logits");
    EXPECT_EQ(out.preds["tracks"]["track_origin"].masked_select(valid.logical_not()).abs().sum().item<float>(), 0.0f);
    expect_close(out.preds["tracks"]["track_vertexing"], ref.edge_logits, 1e-5, tag + " edge logits");
    expect_close(out.loss, ref.loss, 1e-5, tag + " loss");

    auto g_packed = grads(model, out.loss);
    auto g_ref = grads(model, ref.loss);
    ASSERT_EQ(g_packed.size(), g_ref.size());
    for (const auto& [name, g] : g_packed) expect_close(g, g_ref[name], 1e-4, tag + " grad " + name);
  }
}

TEST(Packed, VarlenKernelMatchesExplicit) {
  // Head dims 8 (vector body) and 5 (scalar tail); jets from 1 to 7 tokens.
  for (int64_t dh : {8, 5}) {
    torch::manual_seed(3);
    const int64_t b = 5, h = 3, l = 7, d = h * dh;
    auto lengths = torch::tensor({1, 7, 3, 6, 2}, torch::kLong);
    auto pad = torch::arange(l).unsqueeze(0) >= lengths.unsqueeze(1);
    auto idx = TokenIndex::from_mask(pad);
    auto qkv_rows = torch::randn({idx.size(), 3 * d}, torch::requires_grad());
    // Padded view for the explicit kernel: [B, H, L, Dh] each.
    auto padded = idx.scatter(qkv_rows).view({b, l, 3, h, dh}).permute({2, 0, 3, 1, 4});
    const double scale = 1.0 / std::sqrt(double(dh));
    auto ref = attention_explicit(padded[0], padded[1], padded[2], pad.logical_not().view({b, 1, 1, l}), 0.0, scale);
    auto ref_rows = idx.gather(ref.transpose(1, 2).reshape({b, l, d}));

    auto starts = torch::cat({torch::zeros({1}, torch::kLong), lengths.cumsum(0)});
    auto order = torch::arange(idx.size(), torch::kLong);
    auto got = varlen_attention(qkv_rows, order, starts, h, scale);
    expect_close(got, ref_rows, 1e-5, "forward dh " + std::to_string(dh));

    auto w = torch::randn_like(got);
    auto g_ref = torch::autograd::grad({(ref_rows * w).sum()}, {qkv_rows})[0];
    auto g_got = torch::autograd::grad({(got * w).sum()}, {qkv_rows})[0];
    expect_close(g_got, g_ref, 1e-5, "backward dh " + std::to_string(dh));

    // A scrambled row order gives the same per-token result.
    auto perm = torch::randperm(idx.size());
    auto inv = torch::argsort(perm);
    auto got_perm = varlen_attention(qkv_rows.index_select(0, perm), inv.index_select(0, order), starts, h, scale);
    expect_close(got_perm.index_select(0, inv), got, 1e-6, "row order dh " + std::to_string(dh));
  }
}

TEST(Packed, AttentionPackedEqualsPadded) {
  // do_qk_norm takes the compact padded layout (attention_key_padded) instead of the varlen kernel.
  for (bool qk_norm : {false, true}) {
  torch::manual_seed(5);
  Attention attn(AttentionOptions(12).num_heads(3).do_qk_norm(qk_norm));
  const int64_t b = 4, l = 6;
  auto mask = torch::rand({b, l}) > 0.5;
  mask[2].fill_(true);  // an all-padded jet: only its register remains
  auto x = torch::randn({b, l, 12});
  // Tracks then one always-valid register, as the encoder lays them out.
  auto reg = torch::randn({b, 1, 12});
  auto full = torch::cat({x, reg}, 1);
  auto full_mask = torch::cat({mask, torch::zeros({b, 1}, torch::kBool)}, 1);
  auto padded = attn->forward(full, full_mask);

  PackedSequence seq = PackedSequence::pack(Sequence{x, {{"tracks", mask}}});
  auto reg_mask = torch::zeros({b, 1}, torch::kBool);
  seq.append(kRegisters, reg_mask, TokenIndex::from_mask(reg_mask), reg.reshape({b, 12}));
  auto packed = attn->forward_packed(seq.x, TokenLayout::of(seq));
  PackedSequence back = seq;
  back.x = packed;
  auto unpacked = back.unpack().x;
  auto valid = full_mask.logical_not().unsqueeze(-1);
  expect_close(unpacked.masked_select(valid), padded.masked_select(valid), 1e-5,
               std::string("attention, qk_norm ") + (qk_norm ? "on" : "off"));
  }
}

// CPU bf16 autocast: the varlen kernel runs in float32 on the bf16 projections and
// rounds its output to bf16 (as flash attention on a card), instead of bf16 scores
// and weights on the padded layout. Reference by hand: the explicit float32
// attention of the same bf16 rows, rounded, then out_proj under autocast.
TEST(Packed, Bf16AttentionOnTheCpuIsTheFloatKernelOnBf16Rows) {
  torch::manual_seed(11);
  Attention attn(AttentionOptions(16).num_heads(2));
  const int64_t b = 6, l = 7, d = 16, h = 2, dh = 8;
  auto mask = torch::rand({b, l}) > 0.6;
  auto x = torch::randn({b, l, d});
  PackedSequence seq = PackedSequence::pack(Sequence{x, {{"tracks", mask}}});
  auto reg_mask = torch::zeros({b, 1}, torch::kBool);
  seq.append(kRegisters, reg_mask, TokenIndex::from_mask(reg_mask), torch::randn({b, d}));
  const auto layout = TokenLayout::of(seq);
  auto rows = seq.x.clone().requires_grad_(true);

  torch::Tensor got, projected;
  {
    salt::compat::AutocastGuard autocast(torch::kCPU, torch::kBFloat16);
    got = attn->forward_packed(rows, layout);
    projected = torch::nn::functional::linear(rows, attn->in_proj_weight, attn->in_proj_bias);
  }
  ASSERT_EQ(got.scalar_type(), torch::kBFloat16);
  ASSERT_EQ(projected.scalar_type(), torch::kBFloat16);
  // The float32 reference on the bf16 rows, in the compact padded layout.
  const int64_t lc = layout.length;
  auto qkv = layout.scatter(projected.detach().to(torch::kFloat)).view({b, lc, 3, h, dh}).permute({2, 0, 3, 1, 4});
  auto attended = attention_explicit(qkv[0], qkv[1], qkv[2], layout.pad_mask.logical_not().view({b, 1, 1, lc}), 0.0,
                                     1.0 / std::sqrt(double(dh)));
  auto attended_rows = layout.gather(attended.transpose(1, 2).reshape({b * lc, d})).to(torch::kBFloat16);
  torch::Tensor want;
  {
    salt::compat::AutocastGuard autocast(torch::kCPU, torch::kBFloat16);
    want = attn->out_proj->forward(attended_rows);
  }
  // Rounding the same float32 value gives the same bf16: only a summation order
  // that lands on the other side of a rounding boundary may differ, by one step.
  const auto diff = (got.to(torch::kFloat) - want.to(torch::kFloat)).abs();
  const double same = (diff == 0).to(torch::kFloat).mean().item<double>();
  EXPECT_GT(same, 0.97) << "share of outputs equal to the reference";
  EXPECT_LE(diff.max().item<double>(), 0.02 * want.to(torch::kFloat).abs().max().item<double>());
  got.to(torch::kFloat).sum().backward();
  ASSERT_TRUE(rows.grad().defined());
  EXPECT_TRUE(torch::isfinite(rows.grad()).all().item<bool>());
  EXPECT_GT(rows.grad().abs().sum().item<double>(), 0.0);
}

// Tracks then registers: packed rows are segment after segment, so the encoder
// sorts them jet by jet once (sort_rows) and back (unsort_rows). Worked by hand:
// jet 0 has tracks in slots 0 and 2, jet 1 in slot 1, one register each.
TEST(Packed, TokenLayoutSortsRowsJetByJetAndBack) {
  auto mask = torch::tensor({false, true, false, true, false, true}, torch::kBool).view({2, 3});
  PackedSequence seq = PackedSequence::pack(Sequence{torch::randn({2, 3, 4}), {{"tracks", mask}}});
  EXPECT_TRUE(TokenLayout::of(seq).sorted) << "one segment: already jet by jet";
  auto reg_mask = torch::zeros({2, 1}, torch::kBool);
  seq.append(kRegisters, reg_mask, TokenIndex::from_mask(reg_mask), torch::randn({2, 4}));
  const auto layout = TokenLayout::of(seq);
  ASSERT_FALSE(layout.sorted);
  // rows: 0 (jet 0 slot 0), 1 (jet 0 slot 2), 2 (jet 1 slot 1), 3 (register of jet 0), 4 (register of jet 1)
  EXPECT_TRUE(torch::equal(layout.order, torch::tensor({0, 1, 3, 2, 4}, torch::kLong)));
  EXPECT_TRUE(torch::equal(layout.starts, torch::tensor({0, 3, 5}, torch::kLong)));
  const auto view = layout.sorted_view();
  EXPECT_TRUE(view.sorted);
  EXPECT_TRUE(torch::equal(view.jet, torch::tensor({0, 0, 0, 1, 1}, torch::kLong)));
  EXPECT_TRUE(torch::equal(view.dest, layout.dest.index_select(0, layout.order)));
  EXPECT_TRUE(torch::equal(view.pad_mask, layout.pad_mask));

  auto rows = torch::arange(5 * 2, torch::kFloat).view({5, 2}).requires_grad_(true);
  auto sorted = layout.sort_rows(rows);
  EXPECT_TRUE(torch::equal(sorted.select(1, 0), torch::tensor({0.f, 2.f, 6.f, 4.f, 8.f})));
  auto back = layout.unsort_rows(sorted * torch::tensor({1.f, 2.f, 3.f, 4.f, 5.f}).unsqueeze(1));
  // Row r of back is row r scaled by the weight of its sorted position.
  EXPECT_TRUE(torch::equal(back.select(1, 0), torch::tensor({0.f, 4.f, 16.f, 18.f, 40.f})));
  back.sum().backward();
  EXPECT_TRUE(torch::equal(rows.grad().select(1, 1), torch::tensor({1.f, 2.f, 4.f, 3.f, 5.f})));
  // The layout's scatter agrees whichever order the rows come in.
  EXPECT_TRUE(torch::equal(view.scatter(layout.sort_rows(seq.x)), layout.scatter(seq.x)));
}

// gather_rows: index_select's values; its gradient summed in float32. 300 rows
// share source row 0: in bf16, adding ones one by one stalls at 256 (257 is not a
// bf16 number); in float32 the sum is 300, which bf16 holds exactly.
TEST(Packed, GatherRowsSumsTheGradientInFloat32) {
  auto x = torch::tensor({1.5f, -2.f, 3.f, 0.25f}, torch::kFloat).view({2, 2}).to(torch::kBFloat16).requires_grad_(true);
  auto index = torch::cat({torch::zeros({300}, torch::kLong), torch::ones({2}, torch::kLong)});
  auto rows = gather_rows(x, index);
  EXPECT_TRUE(torch::equal(rows, x.detach().index_select(0, index)));
  rows.sum().backward();
  ASSERT_EQ(x.grad().scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(x.grad().to(torch::kFloat), torch::tensor({300.f, 300.f, 2.f, 2.f}).view({2, 2})));
  // float32 rows take index_select itself.
  auto y = torch::randn({3, 2}, torch::requires_grad());
  gather_rows(y, index.remainder(3)).pow(2).sum().backward();
  auto y2 = y.detach().clone().requires_grad_(true);
  y2.index_select(0, index.remainder(3)).pow(2).sum().backward();
  EXPECT_TRUE(torch::allclose(y.grad(), y2.grad()));
}

// gather_rows_by_segments (gather_rows with RowGroups on a GPU): index_select's values, and its gradient as segment sums
// in float32, for an index taken in a given order, a row no entry names, float32 and bf16.
TEST(Packed, GatherRowsByGroupsSumsEachRowsSegment) {
  torch::manual_seed(3);
  // Rows 0..3; row 2 is never gathered. index[order] = [0, 0, 1, 3, 3, 3].
  auto index = torch::tensor({3, 0, 1, 3, 0, 3}, torch::kLong);
  RowGroups groups{torch::tensor({2, 1, 0, 3}, torch::kLong), torch::tensor({1, 4, 2, 0, 3, 5}, torch::kLong)};
  auto x = torch::randn({4, 3}, torch::requires_grad());
  auto w = torch::randn({6, 3});
  auto rows = gather_rows_by_segments(x, index, groups);
  EXPECT_TRUE(torch::equal(rows, x.detach().index_select(0, index)));
  (rows * w).sum().backward();
  // By hand: row r's gradient is the sum of w over the entries that name r.
  auto expected = torch::stack({w[1] + w[4], w[2], torch::zeros({3}), w[0] + w[3] + w[5]});
  EXPECT_TRUE(torch::allclose(x.grad(), expected, 1e-6, 1e-6)) << x.grad() << expected;
  // bf16: 300 entries of row 0 sum to 300 exactly (bf16 atomics stall at 256).
  auto xb = torch::ones({2, 2}, torch::kBFloat16).requires_grad_(true);
  auto many = torch::cat({torch::zeros({300}, torch::kLong), torch::ones({2}, torch::kLong)});
  gather_rows_by_segments(xb, many, RowGroups{torch::tensor({300, 2}, torch::kLong), torch::Tensor()}).sum().backward();
  ASSERT_EQ(xb.grad().scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(xb.grad().to(torch::kFloat), torch::tensor({300.f, 300.f, 2.f, 2.f}).view({2, 2})));
}

// A vertexing task's edges and their groups, for jets of 0, 1, 4, 3 and 2 valid tracks
// (padded slots in between): each group lists its rows in non-decreasing order and
// counts them, and the segment sums give index_select's gradient.
TEST(Packed, VertexingEdgesGroupBySenderAndReceiver) {
  auto mask = torch::ones({5, 5}, torch::kBool);
  mask[1][2] = false;
  for (int s : {0, 1, 3, 4}) mask[2][s] = false;
  for (int s : {0, 2, 4}) mask[3][s] = false;
  for (int s : {1, 3}) mask[4][s] = false;
  auto idx = TokenIndex::from_mask(mask);
  auto edges = VertexingTaskImpl::edges_of(edge_adjacency(mask, 5, 5), idx);
  ASSERT_EQ(edges.row_i.size(0), 0 + 0 + 4 * 3 + 3 * 2 + 2 * 1);
  auto by_sender = edges.row_i, by_receiver = edges.row_j.index_select(0, edges.receivers.order);
  EXPECT_TRUE(torch::equal(by_sender, std::get<0>(by_sender.sort())));
  EXPECT_TRUE(torch::equal(by_receiver, std::get<0>(by_receiver.sort())));
  auto expected_counts = torch::tensor({0, 3, 3, 3, 3, 2, 2, 2, 1, 1}, torch::kLong);
  EXPECT_TRUE(torch::equal(edges.senders.counts, expected_counts)) << edges.senders.counts;
  EXPECT_TRUE(torch::equal(torch::bincount(edges.row_j, {}, idx.size()), expected_counts));
  auto x = torch::randn({idx.size(), 2}, torch::requires_grad());
  auto w = torch::randn({edges.row_i.size(0), 2});
  auto grad_of = [&](const torch::Tensor& index, const RowGroups* groups) {
    auto rows = groups ? gather_rows_by_segments(x, index, *groups) : x.index_select(0, index);
    return torch::autograd::grad({(rows * w).sum()}, {x})[0];
  };
  EXPECT_TRUE(torch::allclose(grad_of(edges.row_i, &edges.senders), grad_of(edges.row_i, nullptr), 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(grad_of(edges.row_j, &edges.receivers), grad_of(edges.row_j, nullptr), 1e-6, 1e-6));
}

TEST(Packed, FusedAttentionOnTheCompactLayoutEqualsExplicit) {
  if (!salt::compat::kHasFusedAttention) GTEST_SKIP() << "LibTorch " << salt::compat::torch_version() << " has no fused SDPA";
  // do_qk_norm keeps the packed path off the varlen kernel: q, k, v go to the compact
  // layout, where the fused kernel (2.x) or the explicit one runs.
  torch::manual_seed(8);
  const int64_t b = 5, l = 7;
  auto mask = torch::rand({b, l}) > 0.4;
  mask[3].fill_(true);
  auto x = torch::randn({b, l, 12});
  auto reg = torch::randn({b, 12});
  auto outputs = [&](const std::string& attn_type) {
    torch::manual_seed(3);
    Attention attn(AttentionOptions(12).num_heads(3).do_qk_norm(true).attn_type(attn_type));
    PackedSequence seq = PackedSequence::pack(Sequence{x, {{"tracks", mask}}});
    auto reg_mask = torch::zeros({b, 1}, torch::kBool);
    seq.append(kRegisters, reg_mask, TokenIndex::from_mask(reg_mask), reg);
    auto rows = seq.x.clone().requires_grad_(true);
    auto out = attn->forward_packed(rows, TokenLayout::of(seq));
    out.pow(2).sum().backward();
    return std::make_pair(out.detach(), rows.grad());
  };
  auto [explicit_out, explicit_grad] = outputs("torch-math");
  auto [fused_out, fused_grad] = outputs("torch-meff");
  expect_close(fused_out, explicit_out, 1e-5, "packed attention output");
  expect_close(fused_grad, explicit_grad, 1e-4, "packed attention input gradient");
}

TEST(Packed, DenseGatheredEqualsConcatenated) {
  torch::manual_seed(9);
  for (double dropout : {0.0, 0.2}) {
    Dense dense(DenseOptions(5).context_size(3).output_size(2).hidden_layers(std::vector<int64_t>{7}).dropout(dropout));
    dense->eval();
    auto x = torch::randn({6, 5}), ctx = torch::randn({2, 3});
    auto jet = torch::tensor({0, 0, 1, 1, 1, 0}, torch::kLong);
    expect_close(dense->forward_gathered(x, ctx, jet), dense->forward(x, ctx.index_select(0, jet)), 1e-6,
                 "dropout " + std::to_string(dropout));
  }
}
