// Row sums by segment (models/kernels/segment_sum.h): LibTorch's way and the kernel's own
// function run on the CPU, against sums worked by hand; the card's kernel is held
// to the same in tests/gpu.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/errors.h"
#include "models/kernels/segment_sum.h"

namespace salt::models {
namespace {

const auto kLong = torch::TensorOptions().dtype(torch::kLong);

// Rows 0..4 of two columns: row r is (r + 1, 10 (r + 1)).
torch::Tensor five_rows() { return torch::arange(1, 6, torch::kFloat).unsqueeze(1) * torch::tensor({1.f, 10.f}); }

TEST(SegmentSum, SumsEachSegmentsRowsThroughTheOrder) {
  const auto counts = torch::tensor({2, 0, 3}, kLong);
  const auto order = torch::tensor({4, 3, 2, 1, 0}, kLong);
  // Segment 0: rows 4 and 3 (5 + 4); segment 1: none; segment 2: rows 2, 1, 0 (3 + 2 + 1).
  const auto want = torch::tensor({{9.f, 90.f}, {0.f, 0.f}, {6.f, 60.f}});
  EXPECT_TRUE(torch::equal(segment_sum_rows_reference(five_rows(), counts, order), want));
  EXPECT_TRUE(torch::equal(segment_sum_rows_blocks_on_cpu(five_rows(), counts, order), want));
  for (const bool use_kernel : {false, true})  // the CPU takes LibTorch's operators either way
    EXPECT_TRUE(torch::equal(segment_sum_rows(five_rows(), counts, order, use_kernel), want));
}

TEST(SegmentSum, WithoutAnOrderTheRowsComeInTurn) {
  const auto counts = torch::tensor({1, 3}, kLong);
  const auto want = torch::tensor({{1.f, 10.f}, {9.f, 90.f}});  // row 0; rows 1..3 (2 + 3 + 4)
  EXPECT_TRUE(torch::equal(segment_sum_rows_blocks_on_cpu(five_rows(), counts, {}), want));
  // Row 4 lies past the last segment and is not read: not even a NaN there shows.
  auto g = five_rows();
  g[4].fill_(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(torch::equal(segment_sum_rows_blocks_on_cpu(g, counts, {}), want));
  EXPECT_TRUE(torch::equal(segment_sum_rows_reference(g, counts, {}), want));
}

// Many segments of random sizes, a random order: the kernel's function and
// LibTorch's operators agree; in bf16 LibTorch's way sums in float32 as the kernel.
TEST(SegmentSum, TheKernelsFunctionFollowsLibTorch) {
  torch::manual_seed(7);
  const auto counts = torch::randint(0, 30, {500}, kLong);
  const int64_t rows = counts.sum().item<int64_t>();
  const auto g = torch::randn({rows, 24});
  const auto order = torch::randperm(rows, kLong);
  const auto want = segment_sum_rows_reference(g, counts, order);
  EXPECT_TRUE(torch::allclose(segment_sum_rows_blocks_on_cpu(g, counts, order), want, 1e-5, 1e-5));
  const auto half = segment_sum_rows_reference(g.to(torch::kBFloat16), counts, order);
  EXPECT_EQ(half.scalar_type(), torch::kBFloat16);
  // Summed in float32, rounded once: within a bf16 rounding of the float32 sum.
  const auto rounded = segment_sum_rows_blocks_on_cpu(g.to(torch::kBFloat16).to(torch::kFloat), counts, order);
  EXPECT_TRUE(torch::allclose(half.to(torch::kFloat), rounded.to(torch::kBFloat16).to(torch::kFloat), 8e-3, 1e-6));
}

// With a ReLU's output to keep by (pair_relu.h's backward), a row's gradient counts
// where the output is not <= 0, as LibTorch's threshold_backward keeps it: a NaN
// output keeps it, a zero drops it, and a dropped NaN gradient leaves no trace.
TEST(SegmentSum, KeepFoldsAReluBackwardIntoTheSum) {
  const auto counts = torch::tensor({2, 3}, kLong);
  const auto order = torch::tensor({4, 3, 2, 1, 0}, kLong);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto g = five_rows();
  g[3][1] = nan;
  // Rows 0..4 kept: (yes, no), (no, yes), (yes, yes), (yes, no), (NaN, 0).
  const auto keep = torch::tensor({{1.f, -1.f}, {0.f, 2.f}, {3.f, 4.f}, {5.f, 0.f}, {nan, 0.f}});
  // Segment 0: rows 4, 3: column 0 5 + 4, column 1 nothing; segment 1: rows 2, 1, 0:
  // column 0 3 + 1, column 1 30 + 20.
  const auto want = torch::tensor({{9.f, 0.f}, {4.f, 50.f}});
  EXPECT_TRUE(torch::equal(segment_sum_rows_reference(g, counts, order, keep), want));
  EXPECT_TRUE(torch::equal(segment_sum_rows_blocks_on_cpu(g, counts, order, keep), want));
  EXPECT_TRUE(torch::equal(segment_sum_rows(g, counts, order, true, keep), want));
  EXPECT_THROW(segment_sum_rows_blocks_on_cpu(g, counts, order, keep.narrow(0, 0, 4)), salt::UsageError);
}

TEST(SegmentSum, RefusesWhatItsCpuBlocksCannotTake) {
  EXPECT_THROW(segment_sum_rows_blocks_on_cpu(five_rows().to(torch::kDouble), torch::tensor({5}, kLong), {}),
               salt::UsageError);
}

}  // namespace
}  // namespace salt::models
