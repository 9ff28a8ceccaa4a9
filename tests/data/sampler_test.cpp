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

TEST(Sampler, ShardsAreDisjointEqualAndFollowOnePermutation) {
  const auto base = SamplerOptions::training(1000, 10, 3);  // 100 batches
  BatchSampler whole(base);
  const auto all = whole.epoch(4);
  std::set<int64_t> union_of;
  for (int r = 0; r < 3; ++r) {
    auto o = base;
    o.set_shard(r, 3);
    BatchSampler s(o);
    auto mine = s.epoch(4);
    ASSERT_EQ(mine.size(), 33u);  // 100 / 3, remainder dropped
    EXPECT_EQ(s.batches_per_epoch(), 33);
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(mine[i], all[static_cast<size_t>(r) + 3 * i]);
      EXPECT_TRUE(union_of.insert(mine[i].start).second) << "batch on two ranks";
    }
  }
  EXPECT_EQ(union_of.size(), 99u);
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
  const auto all = BatchSampler(o).epoch_in(order);
  ASSERT_EQ(all.size(), 11u);
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(all[i], (Slice{order[i] * 100, 100}));
  EXPECT_EQ(all.back(), (Slice{1000, 50}));
  const auto second = BatchSampler(o.set_shard(1, 2)).epoch_in(order);
  ASSERT_EQ(second.size(), 5u);  // 11 batches / 2 ranks
  for (size_t i = 0; i < second.size(); ++i) EXPECT_EQ(second[i], all[1 + 2 * i]);
}

TEST(Sampler, AnOrderThatIsNoPermutationOfTheBatchesIsRefused) {
  BatchSampler s(SamplerOptions::training(400, 100, 1));  // 4 full batches
  EXPECT_THROW(s.epoch_in({0, 1, 2}), InputError);
  EXPECT_THROW(s.epoch_in({0, 1, 2, 2}), InputError);
  EXPECT_THROW(s.epoch_in({0, 1, 2, 4}), InputError);
  EXPECT_THROW(s.epoch_in({0, 1, 2, -1}), InputError);
  EXPECT_EQ(s.epoch_in({3, 2, 1, 0}).front(), (Slice{300, 100}));
}

}  // namespace
}  // namespace salt::data
