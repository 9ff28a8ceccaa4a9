// The learning rate finder's arithmetic against Lightning's: the step's learning
// rates, the smoothed loss, the suggestion (reference values from torch 1.13,
// commands in each test).
#include "training/tuners/lr_finder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace salt::training {
namespace {

TEST(LrSweep, StepsAsLightningsSchedulersCountOneAheadAfterTheFirst) {
  const LrSweep exp{1e-4, 1, 20, true};
  EXPECT_DOUBLE_EQ(exp.lr_at(0), 1e-4);
  EXPECT_DOUBLE_EQ(exp.lr_at(1), 1e-4 * std::pow(1e4, 2.0 / 20));  // r = 2/20, not 1/20
  EXPECT_DOUBLE_EQ(exp.lr_at(19), 1.0);
  const LrSweep lin{1e-3, 1, 10, false};
  EXPECT_DOUBLE_EQ(lin.lr_at(0), 1e-3);
  EXPECT_DOUBLE_EQ(lin.lr_at(2), 0.30069999999999997);  // python: 1e-3 + (3/10)*(1-1e-3)
  EXPECT_DOUBLE_EQ(lin.lr_at(9), 1.0);
}

TEST(LossSmoother, DebiasesTheRunningMeanAndStopsOnceTheLossDiverges) {
  // python: beta=0.98; avg=beta*avg+(1-beta)*loss; avg/(1-beta**(step+1)) for losses 2, 1, 3
  LossSmoother s(4.0);
  EXPECT_DOUBLE_EQ(s.add(2.0, 1), 1.010101010101009);
  EXPECT_DOUBLE_EQ(s.add(1.0, 2), 1.0066657597605762);
  EXPECT_DOUBLE_EQ(s.add(3.0, 3), 1.52020098969701);
  EXPECT_FALSE(s.diverged());
  s.add(1000.0, 4);  // smoothed ~ 9.2 > 4 x best (1.0067)
  EXPECT_TRUE(s.diverged());
  LossSmoother never(std::nullopt);
  never.add(1, 1);
  never.add(1e9, 2);
  EXPECT_FALSE(never.diverged());
}

TEST(LrSuggestion, IsTheSteepestDescentAsTorchGradientFindsIt) {
  // python (torch 1.13): lrs as LrSweep{1e-4, 1, 20}; losses 2 - 1.5 / (1 + exp(-2 (i - 16))), losses[13] = nan;
  // l = tensor(losses[10:-1]); x = tensor(lrs[10:-1]); finite only;
  // argmin(torch.gradient(l, spacing=[x])[0]) -> index 16 of the whole sweep.
  const LrSweep sweep{1e-4, 1, 20, true};
  std::vector<double> lrs, losses;
  for (int i = 0; i < 20; ++i) {
    lrs.push_back(sweep.lr_at(i));
    losses.push_back(2.0 - 1.5 / (1 + std::exp(-(i - 16) * 2.0)));
  }
  losses[13] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(lr_suggestion_index(lrs, losses), 16u);
  EXPECT_DOUBLE_EQ(lrs[16], 0.251188643150958);
  // Too few points after skipping: no suggestion, as Lightning.
  EXPECT_EQ(lr_suggestion_index({1, 2, 3}, {3, 2, 1}), std::nullopt);
  // skip_end 1 leaves losses 4, 3, 1 at lrs 1, 2, 3: gradients -1, -1.5, -2 (torch.gradient), the last steepest.
  EXPECT_EQ(lr_suggestion_index({1, 2, 3, 4}, {4, 3, 1, 0}, 0, 1), 2u);
}

}  // namespace
}  // namespace salt::training
