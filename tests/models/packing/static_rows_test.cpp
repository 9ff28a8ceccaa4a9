// Static rows (models/packing/static_rows.h), asked for by a forward pass's
// ForwardContext: packed rows and vertexing edges padded to a bucket's capacity give
// GN2 the same outputs, loss and gradients as plain packing, and two batches of one
// bucket dispatch the very same operators with the same shapes and arguments, which
// is what a CUDA graph needs to replay a step.
#include <gtest/gtest.h>

#include <limits>

#include "models/layers/attention.h"
#include "models/model_test_helpers.h"
#include "models/packing/static_rows.h"
#include "models/salt_wrapper.h"
#include "models/tasks/vertexing_task.h"
#include "support/op_trace.h"

using namespace salt::models;
using namespace salt::models::testing;

namespace {

struct Step {
  ModelOutput out;
  std::map<std::string, torch::Tensor> grads;
};

Step train_step(SaltWrapper& model, const ToyBatch& t, StaticRows* static_rows = nullptr) {
  model->zero_grad();
  Step s;
  ForwardContext context;
  context.static_rows = static_rows;
  s.out = model->forward(t.inputs, t.pad_masks, &t.labels, context);
  s.out.loss.backward();
  for (const auto& p : model->named_parameters())
    s.grads[p.key()] = p.value().grad().defined() ? p.value().grad().clone() : torch::zeros_like(p.value());
  return s;
}

}  // namespace

TEST(StaticRows, BucketCapacityWastesAtMostASixteenth) {
  EXPECT_EQ(bucket_capacity(0), 0);
  EXPECT_EQ(bucket_capacity(31), 31);
  EXPECT_EQ(bucket_capacity(32), 32);
  EXPECT_EQ(bucket_capacity(33), 34);      // granule 2 from 32 to 63
  EXPECT_EQ(bucket_capacity(60000), 61440);  // 30 granules of 2048
  EXPECT_EQ(bucket_capacity(65536), 65536);
  EXPECT_EQ(bucket_capacity(65537), 69632);  // 17 granules of 4096
  for (int64_t n = 1; n < 5000; ++n) {
    const int64_t c = bucket_capacity(n);
    ASSERT_GE(c, n);
    ASSERT_LE(16 * (c - n), n) << n;
    ASSERT_EQ(bucket_capacity(c), c) << n;  // a capacity is its own bucket
  }
}

TEST(StaticRows, NotesEachCapacityInOrder) {
  StaticRows rows;
  EXPECT_TRUE(rows.capacities().empty());
  EXPECT_EQ(rows.note(36), 36);
  EXPECT_EQ(rows.note(208), 208);
  EXPECT_EQ(rows.capacities(), (std::vector<int64_t>{36, 208}));
}

TEST(StaticRows, IndexHasTheValidSlotsThenPaddedOnes) {
  // 33 valid slots of 4 x 10 (bucket 34): jet 3 holds the padded slots that come first.
  auto mask = torch::ones({4, 10}, torch::kBool);
  mask[0].narrow(0, 0, 10).fill_(false);
  mask[1].narrow(0, 2, 8).fill_(false);
  mask[2].narrow(0, 0, 10).fill_(false);
  mask[3].narrow(0, 0, 5).fill_(false);
  const auto plain = TokenIndex::from_mask(mask);
  StaticRows on;
  ForwardContext context;
  context.static_rows = &on;
  const auto idx = TokenIndex::from_mask(mask, context);
  ASSERT_EQ(plain.size(), 33);
  ASSERT_EQ(idx.size(), 34);
  EXPECT_EQ(on.capacities(), (std::vector<int64_t>{34}));
  EXPECT_FALSE(plain.row_valid.defined());
  EXPECT_TRUE(torch::equal(idx.flat.narrow(0, 0, 33), plain.flat));
  EXPECT_EQ(idx.flat[33].item<int64_t>(), 10);  // jet 1, slot 0: the first padded slot
  EXPECT_EQ(idx.jet[33].item<int64_t>(), 1);
  EXPECT_EQ(idx.row_valid.sum().item<int64_t>(), 33);
  EXPECT_FALSE(idx.row_valid[33].item<bool>());

  auto padded = torch::randn({4, 10, 3}).masked_fill(mask.unsqueeze(-1), std::numeric_limits<float>::quiet_NaN());
  const auto rows = idx.gather(padded);
  EXPECT_TRUE(torch::equal(rows.narrow(0, 0, 33), plain.gather(padded)));
  EXPECT_TRUE(torch::equal(rows[33], torch::zeros({3})));
  // Back to [B, L]: a padding row's values never reach its padded slot.
  auto garbage = torch::cat({rows.narrow(0, 0, 33), torch::full({1, 3}, 7.0f)});
  EXPECT_TRUE(torch::equal(idx.scatter(garbage), plain.scatter(rows.narrow(0, 0, 33))));
}

TEST(StaticRows, LayoutOfTwoPaddedSegmentsKeepsEveryJetsTokens) {
  // Two constituent segments with padding rows, then registers (as the encoder):
  // the static layout puts every token where the plain one does, its padding rows
  // after all tokens in `order`, and attention gives the tokens the same values.
  torch::manual_seed(8);
  const int64_t b = 12;
  // 33 and 35 valid slots at random (buckets 34 and 36); jet 1 has registers only.
  auto valid_at = [b](int64_t length, int64_t count) {
    auto valid = torch::zeros({b * length}, torch::kBool);
    auto free = torch::arange(b * length);
    free = free.masked_select((free < length) | (free >= 2 * length));
    valid.index_fill_(0, free.index_select(0, torch::randperm(free.size(0)).narrow(0, 0, count)), true);
    return valid.view({b, length}).logical_not();
  };
  const auto mask_a = valid_at(6, 33), mask_b = valid_at(5, 35);
  const auto x = torch::randn({b, 11, 12});
  auto packed = [&](const ForwardContext& context) {
    auto seq = PackedSequence::pack(Sequence{x, {{"a", mask_a}, {"b", mask_b}}}, context);
    seq.append(kRegisters, torch::zeros({b, 2}, torch::kBool), TokenIndex::all_valid(b, 2, torch::kCPU),
               torch::full({b * 2, 12}, 0.5));
    return seq;
  };
  const auto plain_seq = packed({});
  StaticRows on;
  ForwardContext context;
  context.static_rows = &on;
  const auto static_seq = packed(context);
  EXPECT_EQ(on.capacities(), (std::vector<int64_t>{34, 36}));
  ASSERT_TRUE(static_seq.index[0].row_valid.defined());
  ASSERT_GT(static_seq.x.size(0), plain_seq.x.size(0));  // padding rows in both segments
  const auto plain = TokenLayout::of(plain_seq), stat = TokenLayout::of(static_seq);

  EXPECT_EQ(stat.length, 6 + 5 + 2);
  EXPECT_EQ(static_seq.offsets, (std::vector<int64_t>{0, 34, 70, 94}));
  EXPECT_TRUE(torch::equal(stat.starts, plain.starts));
  EXPECT_TRUE(torch::equal(stat.pad_mask.narrow(1, 0, plain.length), plain.pad_mask));
  EXPECT_TRUE(stat.pad_mask.narrow(1, plain.length, stat.length - plain.length).all().item<bool>());
  const int64_t tokens = stat.starts[b].item<int64_t>();
  const auto sorted_valid = stat.row_valid.index_select(0, stat.order);
  EXPECT_TRUE(sorted_valid.narrow(0, 0, tokens).all().item<bool>());
  EXPECT_FALSE(sorted_valid.narrow(0, tokens, sorted_valid.size(0) - tokens).any().item<bool>());
  const auto sorted_dest = stat.dest.index_select(0, stat.order).narrow(0, 0, tokens);
  EXPECT_TRUE((sorted_dest.narrow(0, 1, tokens - 1) > sorted_dest.narrow(0, 0, tokens - 1)).all().item<bool>());
  EXPECT_EQ(std::get<0>(at::_unique(stat.dest)).size(0), stat.dest.size(0));  // one place per row

  Attention attn(AttentionOptions(12).num_heads(3));
  const auto want = attn->forward_packed(plain_seq.x, plain);
  const auto got = attn->forward_packed(static_seq.x, stat);
  for (int64_t s = 0; s < 3; ++s) {  // each segment's tokens lead its rows
    const int64_t n = plain_seq.offsets[s + 1] - plain_seq.offsets[s];
    expect_close(got.narrow(0, static_seq.offsets[s], n), want.narrow(0, plain_seq.offsets[s], n), 1e-5,
                 "segment " + std::to_string(s));
  }
}

TEST(StaticRows, Gn2StepEqualsPlainPacking) {
  for (int registers : {1, 3}) {
    const std::string tag = "registers " + std::to_string(registers);
    auto model = build(small_gn2_yaml(registers), make_context(2, 19));
    model->train();
    // Jet 7 has no track; 35 tracks (36 rows) and 202 edges (208).
    const auto batch = nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 5 + registers);
    const auto plain = train_step(model, batch);
    StaticRows on;
    auto stat = train_step(model, batch, &on);
    EXPECT_EQ(on.capacities(), (std::vector<int64_t>{36, 208})) << tag;
    ASSERT_TRUE(plain.out.loss.isfinite().item<bool>()) << tag;
    expect_close(stat.out.loss, plain.out.loss, 1e-5, tag + " loss");
    const auto pred = [](const Step& s, const char* input, const char* task) { return s.out.preds.at(input).at(task); };
    expect_close(pred(stat, "jets", "jets_classification"), pred(plain, "jets", "jets_classification"), 1e-5,
                 tag + " jet logits");
    expect_close(pred(stat, "tracks", "track_origin"), pred(plain, "tracks", "track_origin"), 1e-5,
                 tag + " origin logits, zeros at padded slots");
    const auto edges = pred(plain, "tracks", "track_vertexing");
    ASSERT_EQ(edges.size(0), 202) << tag;
    ASSERT_EQ(pred(stat, "tracks", "track_vertexing").size(0), 208) << tag;
    expect_close(pred(stat, "tracks", "track_vertexing").narrow(0, 0, 202), edges, 1e-5, tag + " edge logits");
    expect_close(stat.out.sequence.x, plain.out.sequence.x, 1e-5, tag + " sequence, zeros at padded slots");
    ASSERT_EQ(stat.grads.size(), plain.grads.size());
    for (const auto& [name, g] : plain.grads) {
      ASSERT_TRUE(stat.grads[name].isfinite().all().item<bool>()) << tag << " " << name;
      expect_close(stat.grads[name], g, 1e-4, tag + " grad " + name);
    }
  }
}

TEST(StaticRows, OneBucketDispatchesTheSameOperators) {
  auto model = build(small_gn2_yaml(2), make_context(2, 19));
  model->train();
  // 35 and 36 tracks (bucket 36), 202 and 208 edges (bucket 208), different jets.
  const auto first = nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 21);
  const auto second = nan_padded_batch({9, 2, 7, 6, 8, 1, 3, 0}, 9, 22);
  auto trace = [&](const ToyBatch& batch) {
    salt::testing::OpTrace t;
    StaticRows on;
    train_step(model, batch, &on);
    return t.take();
  };
  trace(first);  // once untraced by the comparison: first-call work (lazy inits) out of the way
  const auto a = trace(first), b = trace(second);
  ASSERT_GT(a.size(), 500u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "operator " << i;

  // Without static rows the shapes follow the batch: the test can tell.
  salt::testing::OpTrace plain_trace;
  train_step(model, first);
  const auto plain_a = plain_trace.take();
  train_step(model, second);
  const auto plain_b = plain_trace.take();
  EXPECT_NE(plain_a, plain_b);
}
