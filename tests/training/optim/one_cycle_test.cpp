// The one-cycle schedule and AdamW against PyTorch's own OneCycleLR and AdamW
// (Debian's python3-torch), value by value.
#include <gtest/gtest.h>

#include <sstream>

#include "core/errors.h"
#include "support/test_support.h"
#include "training/optim/one_cycle.h"
#include "training/optim/optimization.h"

namespace salt::testing {
namespace {

using training::LrsConfig;
using training::OneCycleSchedule;

std::string exact(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

std::vector<double> parse_doubles(const std::string& text) {
  std::vector<double> values;
  std::istringstream in(text);
  double v;
  while (in >> v) values.push_back(v);
  return values;
}

struct ScheduleCase {
  LrsConfig lrs;
  int64_t total;
};

// gtest names the parameter in ctest's listing: its sizes, not its bytes.
void PrintTo(const ScheduleCase& c, std::ostream* os) { *os << c.total << " steps"; }

class OneCycleVsTorch : public ::testing::TestWithParam<ScheduleCase> {};

TEST_P(OneCycleVsTorch, SameLearningRateAndBeta1AtEveryStep) {
  SALT_REQUIRE(have_python_module("torch"), "python3-torch is not installed (scripts/bootstrap.sh installs it)");
  const auto& c = GetParam();
  auto r = run_python(R"(
import sys, torch
initial, mx, end, pct, total = map(float, sys.argv[1:6]); total = int(total)
p = torch.nn.Parameter(torch.zeros(1))
opt = torch.optim.AdamW([p], lr=initial, weight_decay=1e-5)
sch = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=mx, total_steps=total, div_factor=mx / initial,
                                          final_div_factor=initial / end, pct_start=pct)
for i in range(total):
    g = opt.param_groups[0]
    print(repr(g["lr"]), repr(g["betas"][0]))
    opt.step(); sch.step()
)",
                      {exact(c.lrs.initial), exact(c.lrs.max), exact(c.lrs.end), exact(c.lrs.pct_start),
                       std::to_string(c.total)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto values = parse_doubles(r.out);
  ASSERT_EQ(values.size(), static_cast<std::size_t>(2 * c.total));
  OneCycleSchedule schedule(c.lrs, c.total);
  for (int64_t i = 0; i < c.total; ++i) {
    EXPECT_NEAR(schedule.lr(i), values[2 * i], 1e-12 * values[2 * i] + 1e-15) << "step " << i;
    EXPECT_NEAR(schedule.beta1(i), values[2 * i + 1], 1e-12) << "step " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, OneCycleVsTorch,
                         ::testing::Values(ScheduleCase{{1e-7, 5e-4, 1e-7, 0.1, 1e-5, -1}, 200},
                                           ScheduleCase{{1e-7, 5e-4, 1e-5, 0.01, 1e-5, -1}, 1000},
                                           ScheduleCase{{1e-4, 2e-3, 1e-4, 0.3, 1e-5, -1}, 37}));

TEST(OneCycle, RefusesToStepPastItsTotal) {
  OneCycleSchedule schedule({1e-7, 5e-4, 1e-7, 0.1, 1e-5, -1}, 10);
  EXPECT_NO_THROW(schedule.lr(10));
  EXPECT_THROW(schedule.lr(11), UsageError);
  EXPECT_THROW(OneCycleSchedule({1e-7, 5e-4, 1e-7, 0.1, 1e-5, -1}, 0), UsageError);
}

TEST(Optimization, AdamWWithScheduleMatchesTorchTrajectory) {
  SALT_REQUIRE(have_python_module("torch"), "python3-torch is not installed (scripts/bootstrap.sh installs it)");
  // Minimise sum((w - target)^2) for 25 steps in float64 in both.
  auto r = run_python(R"(
import torch
torch.set_default_dtype(torch.float64)
w = torch.nn.Parameter(torch.tensor([0.5, -1.0, 2.0]))
target = torch.tensor([1.0, 2.0, -3.0])
opt = torch.optim.AdamW([w], lr=1e-3, weight_decay=1e-2)
sch = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-1, total_steps=25, div_factor=100, final_div_factor=10,
                                          pct_start=0.2)
for i in range(25):
    opt.zero_grad(); ((w - target) ** 2).sum().backward(); opt.step(); sch.step()
print(*[repr(x) for x in w.tolist()])
)");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto expected = parse_doubles(r.out);
  ASSERT_EQ(expected.size(), 3u);

  auto w = torch::tensor({0.5, -1.0, 2.0}, torch::kFloat64).requires_grad_(true);
  auto target = torch::tensor({1.0, 2.0, -3.0}, torch::kFloat64);
  training::Optimization opt({{"w", w}}, training::OptimizerKind::kAdamW, {1e-3, 1e-1, 1e-4, 0.2, 1e-2, -1}, 25);
  for (int i = 0; i < 25; ++i) {
    opt.zero_grad();
    (w - target).pow(2).sum().backward();
    opt.step();
  }
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(w[i].item<double>(), expected[i], 1e-12);
  EXPECT_EQ(opt.steps_done(), 25);
}

}  // namespace
}  // namespace salt::testing
