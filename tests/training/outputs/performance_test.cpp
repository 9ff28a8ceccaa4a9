// The performance table salt test prints: rejections with puma's binomial
// uncertainties worked out by hand, and the flag on figures from few jets.
#include "training/outputs/performance.h"

#include <gtest/gtest.h>

#include <cmath>

namespace salt::testing {
namespace {

using training::Flavour;

// Jets whose D_b (f_c = 0.2) is `d`: pc = pu = 0.1, pb = 0.1 e^d.
struct Jets {
  std::vector<float> pb, pc, pu;
  std::vector<Flavour> truth;
  void add(Flavour f, double d, int n = 1) {
    for (int i = 0; i < n; ++i) {
      pb.push_back(static_cast<float>(0.1 * std::exp(d)));
      pc.push_back(0.1f);
      pu.push_back(0.1f);
      truth.push_back(f);
    }
  }
};

TEST(Performance, FewPassingJetsAreFlaggedWithTheirUncertainty) {
  Jets j;
  for (double d : {0, 1, 2, 3, 4}) j.add(Flavour::kB, d);  // 50% efficiency: cut at D_b = 2
  for (double d : {0.5, 1.5, 2.5, 3.5}) j.add(Flavour::kLight, d);  // 2 of 4 pass
  j.add(Flavour::kC, 2.1);  // 1 of 25 passes
  j.add(Flavour::kC, 0, 24);
  const auto perf = training::btag_performance(j.pb, j.pc, j.pu, j.truth, 0.2, {0.5});
  ASSERT_EQ(perf.points.size(), 1u);
  const auto& p = perf.points[0];
  EXPECT_NEAR(p.cut, 2.0, 1e-6);
  EXPECT_EQ(p.light_passing, 2);
  EXPECT_DOUBLE_EQ(p.light_rejection, 2.0);
  EXPECT_NEAR(p.light_uncertainty, 4 * std::sqrt(0.5 * 0.5 / 4), 1e-12);  // rej^2 sqrt(e(1-e)/N) = 1
  EXPECT_EQ(p.c_passing, 1);
  EXPECT_DOUBLE_EQ(p.c_rejection, 25.0);
  EXPECT_NEAR(p.c_uncertainty, 625 * std::sqrt(0.04 * 0.96 / 25), 1e-9);  // 24.495
  const auto table = training::format_performance(perf, "T");
  EXPECT_NE(table.find("2.0 ± 1.0!"), std::string::npos) << table;
  EXPECT_NE(table.find("25.00 ± 24.49!"), std::string::npos) << table;
  EXPECT_NE(table.find("! fewer than 20 background jets pass the cut"), std::string::npos) << table;
}

TEST(Performance, EnoughPassingJetsAreNotFlagged) {
  Jets j;
  for (double d : {0, 1, 2, 3, 4}) j.add(Flavour::kB, d);
  j.add(Flavour::kLight, 3, 50);  // 50 of 100 pass: 2.0 +- 4 sqrt(0.25/100) = 0.2
  j.add(Flavour::kLight, 1, 50);
  j.add(Flavour::kC, 3, 40);  // 40 of 100: 2.5 +- 6.25 sqrt(0.24/100) = 0.306
  j.add(Flavour::kC, 1, 60);
  const auto perf = training::btag_performance(j.pb, j.pc, j.pu, j.truth, 0.2, {0.5});
  const auto table = training::format_performance(perf, "T");
  EXPECT_NE(table.find("T b-tagging performance (f_c = 0.20; 5 b, 100 c, 100 light jets)"), std::string::npos) << table;
  EXPECT_NE(table.find("2.0 ± 0.2 "), std::string::npos) << table;
  EXPECT_NE(table.find("2.50 ± 0.31\n"), std::string::npos) << table;
  EXPECT_EQ(table.find("!"), std::string::npos) << table;
}

TEST(Performance, NoPassingJetIsInfiniteAndFlagged) {
  Jets j;
  for (double d : {0, 1, 2, 3, 4}) j.add(Flavour::kB, d);
  j.add(Flavour::kLight, -1, 30);
  j.add(Flavour::kC, 3, 30);
  const auto perf = training::btag_performance(j.pb, j.pc, j.pu, j.truth, 0.2, {0.5});
  EXPECT_TRUE(std::isinf(perf.points[0].light_rejection));
  const auto table = training::format_performance(perf, "T");
  EXPECT_NE(table.find("inf (none pass)!"), std::string::npos) << table;
}

}  // namespace
}  // namespace salt::testing
