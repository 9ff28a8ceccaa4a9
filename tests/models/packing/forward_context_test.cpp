// A forward pass's context (models/packing/forward_context.h) steers that pass alone:
// two forward passes in one process, one given static rows, the batch's host copies
// and other kernels, one given the default context, each compute as their own
// context says. (With the thread-locals and process-wide flags the context replaced,
// a static-rows guard alive on the thread padded every forward pass under it, and a
// kernel switch set for one pass held for all.)
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "core/torch_compat.h"
#include "models/model_test_helpers.h"
#include "models/packing/common.h"
#include "models/packing/host_read.h"
#include "models/packing/host_twins.h"
#include "models/packing/static_rows.h"
#include "models/salt_wrapper.h"
#include "models/tasks/vertexing_task.h"

using namespace salt::models;
using namespace salt::models::testing;

namespace {

int64_t edges_of(const ModelOutput& out) { return out.preds.at("tracks").at("track_vertexing").size(0); }

// The batch's masks and labels as their own host copies (as batch_to_device on the CPU).
salt::HostTwins own_twins(const ToyBatch& batch) {
  salt::HostTwins twins;
  for (const auto& [name, mask] : batch.pad_masks) twins.add(mask, mask);
  for (const auto& [input, labels] : batch.labels)
    for (const auto& [name, label] : labels) twins.add(label, label);
  return twins;
}

}  // namespace

TEST(ForwardContext, EachForwardPassTakesItsOwnContext) {
  auto model = build(small_gn2_yaml(2), make_context(2, 19));
  model->train();
  // 35 tracks (rows bucket 36) and 202 edges (bucket 208).
  const auto batch = nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 5);
  const auto twins = own_twins(batch);

  StaticRows recorded;
  ForwardContext padded;
  padded.twins = &twins;
  padded.static_rows = &recorded;
  padded.kernels.short_attention = false;
  padded.kernels.segment_sum_kernel = true;
  const auto reads = salt::host_reads();
  const auto first = model->forward(batch.inputs, batch.pad_masks, &batch.labels, padded);
  EXPECT_EQ(salt::host_reads(), reads) << "the host copies were read, not the device";
  EXPECT_EQ(edges_of(first), 208);
  EXPECT_EQ(recorded.capacities(), (std::vector<int64_t>{36, 208}));

  // The recorder still lives: a pass given the default context packs exactly the
  // valid rows and edges, reads the device and records nothing.
  const auto second = model->forward(batch.inputs, batch.pad_masks, &batch.labels);
  EXPECT_GT(salt::host_reads(), reads);
  EXPECT_EQ(edges_of(second), 202);
  EXPECT_EQ(recorded.capacities().size(), 2u);
  ASSERT_TRUE(second.loss.isfinite().item<bool>());
  expect_close(first.loss, second.loss, 1e-5, "loss");

  // A second recorder gets its own pass's capacities, the first none of them.
  StaticRows other;
  ForwardContext other_context;
  other_context.static_rows = &other;
  model->forward(batch.inputs, batch.pad_masks, &batch.labels, other_context);
  EXPECT_EQ(other.capacities(), (std::vector<int64_t>{36, 208}));
  EXPECT_EQ(recorded.capacities().size(), 2u);
}

// The kernels' choices travel with the rows they act on: from the packed sequence
// to its layouts (attention reads TokenLayout::kernels) and into the vertexing
// edges' row groups (their backward's segment sums). The CPU runs the same
// operators either way, so they are checked where they are carried.
TEST(ForwardContext, KernelsTravelWithThePackedRowsToWhereTheyAct) {
  const int64_t b = 3, l = 4;
  auto mask = torch::tensor({false, false, true, true, false, true, true, true, false, false, false, true}).view({b, l});
  const auto x = torch::randn({b, l, 5});
  ForwardContext context;
  context.kernels.short_attention = false;
  context.kernels.segment_sum_kernel = true;
  const auto chosen = PackedSequence::pack(Sequence{x, {{"tracks", mask}}}, context);
  EXPECT_FALSE(chosen.kernels.short_attention);
  EXPECT_FALSE(TokenLayout::of(chosen).kernels.short_attention);
  EXPECT_FALSE(TokenLayout::of(chosen).sorted_view().kernels.short_attention);
  const auto plain = PackedSequence::pack(Sequence{x, {{"tracks", mask}}});
  EXPECT_TRUE(TokenLayout::of(plain).kernels.short_attention);  // the default

  const auto idx = TokenIndex::from_mask(mask);
  const auto adjacency = edge_adjacency(mask, b, l);
  const auto edges = VertexingTaskImpl::edges_of(adjacency, idx, -1, context);
  EXPECT_TRUE(edges.senders.segment_sum_kernel);
  EXPECT_TRUE(edges.receivers.segment_sum_kernel);
  const auto default_edges = VertexingTaskImpl::edges_of(adjacency, idx);
  EXPECT_FALSE(default_edges.senders.segment_sum_kernel);
  EXPECT_FALSE(default_edges.receivers.segment_sum_kernel);
}

// Bucketed rows pad as static rows do, with nothing to record: the vertexing edges
// and packed rows take their buckets' capacities, the loss is the plain packing's
// (padding never reaches it), in float32 and under CPU bf16 autocast alike.
TEST(ForwardContext, BucketedRowsPadLikeStaticRowsWithoutARecord) {
  auto model = build(small_gn2_yaml(2), make_context(2, 19));
  model->train();
  const auto batch = nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 5);  // 35 tracks, 202 edges
  ForwardContext bucketed;
  bucketed.kernels.bucketed_rows = true;
  for (bool bf16 : {false, true}) {
    std::optional<salt::compat::AutocastGuard> autocast;
    if (bf16) autocast.emplace(torch::kCPU, torch::kBFloat16);
    const auto padded = model->forward(batch.inputs, batch.pad_masks, &batch.labels, bucketed);
    const auto plain = model->forward(batch.inputs, batch.pad_masks, &batch.labels);
    EXPECT_EQ(edges_of(padded), 208) << bf16;
    EXPECT_EQ(edges_of(plain), 202) << bf16;
    ASSERT_TRUE(plain.loss.isfinite().item<bool>());
    expect_close(padded.loss.to(torch::kFloat), plain.loss.to(torch::kFloat), bf16 ? 2e-2 : 1e-5, "loss");
  }
  // The gradients too: the attention's varlen kernel skips the padding rows (their
  // output unwritten, zeroed after), so nothing of them reaches a parameter; under
  // bf16 autocast within bf16's rounding (the products' row counts differ).
  auto grads = [&](const ForwardContext& context, bool bf16) {
    std::optional<salt::compat::AutocastGuard> autocast;
    if (bf16) autocast.emplace(torch::kCPU, torch::kBFloat16);
    model->zero_grad();
    model->forward(batch.inputs, batch.pad_masks, &batch.labels, context).loss.to(torch::kFloat).backward();
    std::vector<torch::Tensor> g;
    for (const auto& p : model->parameters())
      if (p.grad().defined()) g.push_back(p.grad().clone());
    return g;
  };
  for (bool bf16 : {false, true}) {
    const auto padded = grads(bucketed, bf16), plain = grads(ForwardContext{}, bf16);
    ASSERT_EQ(padded.size(), plain.size());
    ASSERT_GT(plain.size(), 10u);
    for (size_t i = 0; i < plain.size(); ++i) {
      ASSERT_TRUE(padded[i].isfinite().all().item<bool>()) << i;
      const double scale = plain[i].abs().max().item<double>();
      EXPECT_LE((padded[i] - plain[i]).abs().max().item<double>(), (bf16 ? 2e-2 : 1e-4) * std::max(scale, 1.0))
          << "bf16 " << bf16 << " grad " << i;
    }
  }
}
