// The assignment solver against brute force: every random matrix up to 7 x 7
// (square and rectangular, real costs and small integers with many ties,
// negative entries) gets the minimal total cost, with a valid matching.
#include "core/linear_assignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>

namespace salt {
namespace {

// The minimum over every injective map of the smaller side into the larger.
double brute_force(const std::vector<double>& cost, int64_t rows, int64_t cols) {
  const bool wide = rows <= cols;
  const int64_t small = wide ? rows : cols, large = wide ? cols : rows;
  std::vector<int64_t> perm(static_cast<size_t>(large));
  std::iota(perm.begin(), perm.end(), 0);
  double best = std::numeric_limits<double>::infinity();
  do {
    double total = 0;
    for (int64_t i = 0; i < small; ++i) {
      const int64_t j = perm[static_cast<size_t>(i)];
      total += wide ? cost[static_cast<size_t>(i * cols + j)] : cost[static_cast<size_t>(j * cols + i)];
    }
    best = std::min(best, total);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

void expect_valid(const Assignment& a, const std::vector<double>& cost, int64_t rows, int64_t cols) {
  ASSERT_EQ(a.rows.size(), static_cast<size_t>(std::min(rows, cols)));
  ASSERT_EQ(a.cols.size(), a.rows.size());
  EXPECT_TRUE(std::is_sorted(a.rows.begin(), a.rows.end()));
  EXPECT_EQ(std::set<int64_t>(a.rows.begin(), a.rows.end()).size(), a.rows.size());
  EXPECT_EQ(std::set<int64_t>(a.cols.begin(), a.cols.end()).size(), a.cols.size());
  double total = 0;
  for (size_t k = 0; k < a.rows.size(); ++k) {
    ASSERT_GE(a.rows[k], 0);
    ASSERT_LT(a.rows[k], rows);
    ASSERT_GE(a.cols[k], 0);
    ASSERT_LT(a.cols[k], cols);
    total += cost[static_cast<size_t>(a.rows[k] * cols + a.cols[k])];
  }
  EXPECT_DOUBLE_EQ(a.cost, total);
}

TEST(LinearAssignment, EqualsBruteForceOnEveryRandomMatrixUpTo7x7) {
  std::mt19937_64 rng(20261124);
  std::uniform_real_distribution<double> real(-5.0, 10.0);
  std::uniform_int_distribution<int> small_int(0, 3);
  int checked = 0;
  for (int64_t rows = 1; rows <= 7; ++rows)
    for (int64_t cols = 1; cols <= 7; ++cols)
      for (int trial = 0; trial < 30; ++trial) {
        std::vector<double> cost(static_cast<size_t>(rows * cols));
        for (auto& x : cost) x = trial % 2 ? real(rng) : small_int(rng);  // odd: reals, even: many ties
        const auto a = linear_sum_assignment(cost, rows, cols);
        expect_valid(a, cost, rows, cols);
        EXPECT_NEAR(a.cost, brute_force(cost, rows, cols), 1e-9) << rows << " x " << cols << " trial " << trial;
        ++checked;
      }
  EXPECT_EQ(checked, 7 * 7 * 30);
}

TEST(LinearAssignment, KnownSmallCases) {
  // The textbook example: 1+... rows 0->1 (1), 1->0 (2), 2->2 (2) = 5.
  const std::vector<double> cost{4, 1, 3, 2, 0, 5, 3, 2, 2};
  const auto a = linear_sum_assignment(cost, 3, 3);
  EXPECT_EQ(a.cols, (std::vector<int64_t>{1, 0, 2}));
  EXPECT_DOUBLE_EQ(a.cost, 5);
  // 2 x 3: each row takes its cheapest column when they differ.
  const auto b = linear_sum_assignment({7, 1, 9, 2, 8, 3}, 2, 3);
  EXPECT_EQ(b.rows, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(b.cols, (std::vector<int64_t>{1, 0}));
  // 3 x 1: the cheapest row gets the only column.
  const auto c = linear_sum_assignment({5, -1, 3}, 3, 1);
  EXPECT_EQ(c.rows, (std::vector<int64_t>{1}));
  EXPECT_EQ(c.cols, (std::vector<int64_t>{0}));
  EXPECT_TRUE(linear_sum_assignment({}, 0, 4).rows.empty());
}

TEST(LinearAssignment, RefusesNonFiniteCostsAndWrongSizes) {
  EXPECT_THROW(linear_sum_assignment({1, std::numeric_limits<double>::quiet_NaN()}, 1, 2), std::invalid_argument);
  EXPECT_THROW(linear_sum_assignment({1, std::numeric_limits<double>::infinity()}, 2, 1), std::invalid_argument);
  EXPECT_THROW(linear_sum_assignment({1, 2, 3}, 2, 2), std::invalid_argument);
}

}  // namespace
}  // namespace salt
