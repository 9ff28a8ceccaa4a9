// Weak shuffling: salt's batch semantics, determinism and sharding.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/errors.h"
#include "data/sampler.h"

namespace salt::data {
namespace {

std::vector<int64_t> starts(const std::vector<Slice>& v) {
  std::vector<int64_t> out;
  for (const auto& s : v) out.push_back(s.start);
  return out;
}

TEST(Sampler, TrainingVisitsEveryFullBatchOnceAndDropsTail) {
  BatchSampler s(SamplerOptions::training(103, 10, 42));
  EXPECT_EQ(s.batches_per_epoch(), 10);
  auto e0 = s.epoch(0);
  ASSERT_EQ(e0.size(), 10u);
  std::set<int64_t> seen;
  for (const auto& sl : e0) {
    EXPECT_EQ(sl.size, 10);
    EXPECT_EQ(sl.start % 10, 0);  // contiguous slices [kB, (k+1)B)
    seen.insert(sl.start);
  }
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(*seen.rbegin(), 90);  // rows 100..102 (the partial tail) never appear
  EXPECT_NE(starts(e0), starts(s.epoch(1)));             // reshuffled each epoch
  EXPECT_EQ(starts(e0), starts(s.epoch(0)));             // deterministic
  EXPECT_EQ(starts(e0), starts(BatchSampler(SamplerOptions::training(103, 10, 42)).epoch(0)));
  EXPECT_NE(starts(e0), starts(BatchSampler(SamplerOptions::training(103, 10, 7)).epoch(0)));
  std::vector<int64_t> sorted = starts(e0);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(sorted, starts(e0));  // actually shuffled
}

TEST(Sampler, EvaluationInOrderKeepsTail) {
  BatchSampler s(SamplerOptions::evaluation(25, 10));
  EXPECT_EQ(s.batches_per_epoch(), 3);
  EXPECT_EQ(s.epoch(0), (std::vector<Slice>{{0, 10}, {10, 10}, {20, 5}}));
  EXPECT_EQ(s.epoch(5), s.epoch(0));
  EXPECT_EQ(BatchSampler(SamplerOptions::evaluation(20, 10)).epoch(0), (std::vector<Slice>{{0, 10}, {10, 10}}));
  EXPECT_TRUE(BatchSampler(SamplerOptions::evaluation(0, 10)).epoch(0).empty());
  EXPECT_TRUE(BatchSampler(SamplerOptions::training(9, 10, 1)).epoch(0).empty());
}

TEST(Sampler, PermutationIsPinned) {
  // The documented RNG (mt19937_64 + our Fisher-Yates) gives these exact orders on
  // every platform; a change here changes every user's training order.
  EXPECT_EQ(permutation(10, 42), (std::vector<int64_t>{1, 7, 9, 0, 3, 8, 4, 2, 5, 6}));
  EXPECT_EQ(permutation(1, 42), (std::vector<int64_t>{0}));
  EXPECT_TRUE(permutation(0, 42).empty());
}

TEST(Sampler, ShardsArePaddedAsTorchsDistributedSamplerPadsThem) {
  // 100 batches over 3 ranks: 34 each, the list padded with its first 2 positions.
  const auto base = SamplerOptions::evaluation(1000, 10);  // unshuffled: positions in order
  const auto all = BatchSampler(base).epoch(4);
  std::multiset<int64_t> union_of;
  for (int r = 0; r < 3; ++r) {
    auto o = base;
    BatchSampler s(o.set_shard(r, 3));
    const auto mine = s.epoch(4);
    ASSERT_EQ(mine.size(), 34u);
    EXPECT_EQ(s.batches_per_epoch(), 34);
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(mine[i], all[(static_cast<size_t>(r) + 3 * i) % all.size()]);
      union_of.insert(mine[i].start);
    }
  }
  EXPECT_EQ(union_of.size(), 102u);
  EXPECT_EQ(union_of.count(0), 2u);  // positions 0 and 1 come twice
  EXPECT_EQ(union_of.count(10), 2u);
  // Fewer batches than ranks: the list repeats until every rank has one.
  auto one = SamplerOptions::evaluation(5, 10);
  EXPECT_EQ(BatchSampler(one.set_shard(2, 3)).epoch(0), (std::vector<Slice>{{0, 5}}));
  // Shuffled (training): the positions follow torch.randperm(n, generator seeded seed + epoch);
  // g = torch.Generator(); g.manual_seed(7); torch.randperm(5, generator=g) is
  // [0, 1, 3, 2, 4] (Python torch).
  EXPECT_EQ(shard_positions(5, 0, 2, nullptr), (std::vector<int64_t>{0, 2, 4}));
  const uint64_t seed = 7;
  EXPECT_EQ(shard_positions(5, 0, 1, &seed), (std::vector<int64_t>{0, 1, 3, 2, 4}));
  EXPECT_EQ(shard_positions(5, 1, 2, &seed), (std::vector<int64_t>{1, 2, 0}));  // its 2nd, 4th and the padding's 1st
}

TEST(Sampler, RejectsBadSettings) {
  EXPECT_THROW(BatchSampler(SamplerOptions::training(10, 0, 1)), InputError);
  EXPECT_THROW(BatchSampler(SamplerOptions::training(10, 2, 1).set_shard(2, 2)), InputError);
  EXPECT_THROW(BatchSampler(SamplerOptions::training(10, 2, 1).set_shard(0, 0)), InputError);
}

}  // namespace
}  // namespace salt::data

namespace salt::data {
namespace {

TEST(Sampler, AGivenOrderIsFollowedWithTheTailAndTheShard) {
  auto o = SamplerOptions::evaluation(1050, 100);  // 10 full batches and a tail of 50
  const std::vector<int64_t> order{3, 1, 4, 0, 5, 9, 2, 6, 8, 7};
  const auto all = BatchSampler(o).epoch_in(order, 0);
  ASSERT_EQ(all.size(), 11u);
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(all[i], (Slice{order[i] * 100, 100}));
  EXPECT_EQ(all.back(), (Slice{1000, 50}));
  const auto second = BatchSampler(o.set_shard(1, 2)).epoch_in(order, 0);
  ASSERT_EQ(second.size(), 6u);  // 11 batches over 2 ranks, padded to 12 with the first
  for (size_t i = 0; i < second.size(); ++i) EXPECT_EQ(second[i], all[(1 + 2 * i) % all.size()]);
}

TEST(Sampler, AnOrderThatIsNoPermutationOfTheBatchesIsRefused) {
  BatchSampler s(SamplerOptions::training(400, 100, 1));  // 4 full batches
  EXPECT_THROW(s.epoch_in({0, 1, 2}, 0), InputError);
  EXPECT_THROW(s.epoch_in({0, 1, 2, 2}, 0), InputError);
  EXPECT_THROW(s.epoch_in({0, 1, 2, 4}, 0), InputError);
  EXPECT_THROW(s.epoch_in({0, 1, 2, -1}, 0), InputError);
  EXPECT_EQ(s.epoch_in({3, 2, 1, 0}, 0).front(), (Slice{300, 100}));
}

}  // namespace
}  // namespace salt::data
