// Rejection curves: values worked out by hand, and numpy's percentile-based
// computation (puma's calc_rej and rej_err) on random scores.
#include "plot/rejection.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "support/test_support.h"

namespace salt::testing {
namespace {

using plot::rejection_curve;

TEST(Rejection, SmallExampleByHand) {
  // b scores 0..4: the cut keeping a fraction e of them is the (1 - e) quantile,
  // interpolated: e = 0.5 -> 2, 0.75 -> 1, 0.9 -> 0.4, 0.2 -> 3.2, 0 -> 4.
  const std::vector<double> b{3, 0, 4, 1, 2}, light{2.5, 0.5, 3.5, 1.5};
  const auto c = rejection_curve(b, light, {0.5, 0.75, 0.9, 0.2, 0.0}, "light");
  ASSERT_EQ(c.rejection.size(), 5u);
  EXPECT_EQ(c.n_background, 4);
  EXPECT_EQ(c.passing, (std::vector<int64_t>{2, 3, 4, 1, 0}));
  EXPECT_DOUBLE_EQ(c.rejection[0], 2.0);
  EXPECT_DOUBLE_EQ(c.rejection[1], 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(c.rejection[2], 1.0);
  EXPECT_DOUBLE_EQ(c.rejection[3], 4.0);
  EXPECT_TRUE(std::isinf(c.rejection[4]));  // nothing passes
  // rej^2 * sqrt(e (1 - e) / N), e = 1 / rej, N = 4
  EXPECT_NEAR(c.uncertainty[0], 4 * std::sqrt(0.25 / 4), 1e-12);             // 1
  EXPECT_NEAR(c.uncertainty[1], 16.0 / 9 * std::sqrt(0.75 * 0.25 / 4), 1e-12);  // 0.3849
  EXPECT_NEAR(c.uncertainty[2], 0.0, 1e-12);
  EXPECT_NEAR(c.uncertainty[3], 16 * std::sqrt(0.25 * 0.75 / 4), 1e-12);  // 3.4641
  EXPECT_TRUE(std::isnan(c.uncertainty[4]));
}

TEST(Rejection, DiscriminantByHand) {
  // D_b = log(pb / (f_c pc + (1 - f_c) pu)): 0.6 / (0.2 * 0.3 + 0.8 * 0.1) = 0.6 / 0.14
  EXPECT_NEAR(plot::discriminant_b(0.6, 0.3, 0.1, 0.2), std::log(0.6 / 0.14), 1e-9);
  EXPECT_TRUE(std::isfinite(plot::discriminant_b(1.0, 0.0, 0.0, 0.2)));
}

TEST(Rejection, EqualsNumpysPercentileComputationOnRandomScores) {
  ASSERT_TRUE(have_python_module("numpy")) << "needs numpy in " << test_python();
  std::mt19937 rng(7);
  std::normal_distribution<double> sig(2.0, 1.5), bkg(0.0, 1.0);
  std::vector<double> b(997), light(1503);
  for (auto& v : b) v = sig(rng);
  for (auto& v : light) v = bkg(rng);
  const auto effs = plot::default_efficiencies();
  const auto curve = rejection_curve(b, light, effs, "light");

  TempDir dir;
  std::ostringstream text;
  text.precision(17);
  for (double v : b) text << v << " ";
  text << "\n";
  for (double v : light) text << v << " ";
  text << "\n";
  write_file(dir / "scores.txt", text.str());
  // puma: cut = np.percentile(sig, 100 (1 - eff)); rej = 1 / mean(bkg > cut);
  // rej_err = rej**2 * sqrt(e (1 - e) / N) with e = 1 / rej.
  auto r = run_python(R"(
import sys, numpy as np
lines = open(sys.argv[1]).read().split("\n")
sig = np.array(lines[0].split(), dtype=float); bkg = np.array(lines[1].split(), dtype=float)
for eff in np.arange(49, 101) / 100:
    cut = np.percentile(sig, 100 * (1 - eff))
    e = np.mean(bkg > cut)
    rej = 1 / e
    print(repr(float(rej)), repr(float(rej**2 * np.sqrt(e * (1 - e) / len(bkg)))))  # plain floats under numpy 2 too
)",
                      {(dir / "scores.txt").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  for (std::size_t i = 0; i < effs.size(); ++i) {
    double rej = 0, err = 0;
    ASSERT_TRUE(in >> rej >> err) << "line " << i << " of " << r.out;
    EXPECT_NEAR(curve.rejection[i], rej, 1e-9 * rej) << "eff " << effs[i];
    EXPECT_NEAR(curve.uncertainty[i], err, 1e-9 * err + 1e-12) << "eff " << effs[i];
  }
}

}  // namespace
}  // namespace salt::testing
