// 16-mixed's loss scaling (training/optim/grad_scaler.h) against torch.amp.GradScaler's
// rules, worked out by hand: the scaled loss, exact unscaling by a power of two,
// inf/NaN detection, the skipped step, backoff and growth (torch's
// _amp_update_scale_: grow after growth_interval finite steps, never to inf), and
// the checkpoint's `MixedPrecision` entry as Lightning 2.x writes it, read back
// by Python's torch.load.
#include <gtest/gtest.h>

#include <limits>

#include "support/test_support.h"
#include "training/checkpoints/checkpoint.h"
#include "training/optim/grad_scaler.h"
#include "training/optim/optimization.h"

namespace salt::testing {
namespace {

using training::GradScaler;
using training::GradScalerState;

torch::Tensor param_with_grad(std::vector<float> grad) {
  auto p = torch::zeros({static_cast<int64_t>(grad.size())}).requires_grad_();
  p.mutable_grad() = torch::tensor(grad);
  return p;
}

TEST(GradScaler, ScalesTheLossByTwoToTheSixteenByDefault) {
  GradScaler scaler;
  auto scaled = scaler.scale(torch::tensor(1.5f));
  EXPECT_EQ(scaled.item<float>(), 98304.0f);  // 1.5 * 65536
  EXPECT_EQ(scaled.scalar_type(), torch::kFloat32);
}

TEST(GradScaler, UnscalesExactlyAndLetsAFiniteStepThrough) {
  GradScaler scaler;
  auto p = param_with_grad({65536.0f * 0.25f, -65536.0f * 3.0f});
  auto q = torch::zeros({1}).requires_grad_();  // no gradient: left alone
  scaler.unscale({p, q});
  EXPECT_TRUE(torch::equal(p.grad(), torch::tensor({0.25f, -3.0f})));
  EXPECT_FALSE(q.grad().defined());
  EXPECT_TRUE(scaler.gradients_finite());
  scaler.update();
  EXPECT_EQ(scaler.state().scale, 65536.0);
  EXPECT_EQ(scaler.state().growth_tracker, 1);
}

TEST(GradScaler, AnInfOrNanGradientSkipsTheStepAndHalvesTheScale) {
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    GradScaler scaler(GradScalerState{1024.0, 2.0, 0.5, 2000, 7});
    auto ok = param_with_grad({1.0f});
    auto broken = param_with_grad({2.0f, bad});
    scaler.unscale({ok, broken});
    EXPECT_FALSE(scaler.gradients_finite());
    scaler.update();
    EXPECT_EQ(scaler.state().scale, 512.0);
    EXPECT_EQ(scaler.state().growth_tracker, 0);
    EXPECT_EQ(scaler.scale(torch::tensor(1.0f)).item<float>(), 512.0f);  // the next step uses the new scale
  }
}

TEST(GradScaler, GrowsAfterGrowthIntervalFiniteStepsButNeverToInfinity) {
  GradScaler scaler(GradScalerState{8.0, 2.0, 0.5, 3, 0});
  for (int step = 1; step <= 6; ++step) {
    auto p = param_with_grad({1.0f});
    scaler.unscale({p});
    scaler.update();
    // steps 1, 2: tracker 1, 2; step 3 grows to 16 and resets; 4, 5; step 6 grows to 32
    EXPECT_EQ(scaler.state().scale, step < 3 ? 8.0 : step < 6 ? 16.0 : 32.0) << step;
    EXPECT_EQ(scaler.state().growth_tracker, step % 3) << step;
  }
  GradScaler top(GradScalerState{std::ldexp(1.0, 127), 2.0, 0.5, 1, 0});  // 2**128 overflows float32
  auto p = param_with_grad({1.0f});
  top.unscale({p});
  top.update();
  EXPECT_EQ(top.state().scale, std::ldexp(1.0, 127));
  EXPECT_EQ(top.state().growth_tracker, 0);
}

// A skipped step changes no parameter and no optimizer state, but counts, and the
// one-cycle schedule moves on, as Lightning steps its scheduler either way.
TEST(GradScaler, ASkippedOptimizerStepLeavesTheParametersAndAdvancesTheSchedule) {
  training::Optimization::NamedParameters params;
  params.insert("w", torch::tensor({1.0f, 2.0f}).requires_grad_());
  training::Optimization opt(params, training::OptimizerKind::kAdamW, training::LrsConfig{1e-3, 1e-2, 1e-4, 0.5, 0.0, -1},
                             10);
  params["w"].mutable_grad() = torch::tensor({0.5f, std::numeric_limits<float>::infinity()});
  const double lr_before = opt.current_lr();
  opt.step(false);
  EXPECT_TRUE(torch::equal(params["w"], torch::tensor({1.0f, 2.0f})));
  EXPECT_EQ(opt.steps_done(), 1);
  EXPECT_EQ(opt.schedule_index(), 1);
  EXPECT_NE(opt.current_lr(), lr_before);
  EXPECT_TRUE(training::adam_state(opt).front().empty());  // AdamW never ran
}

TEST(GradScaler, CheckpointCarriesLightningsNativeAmpScalingState) {
  TempDir dir;
  training::CheckpointState state;
  state.config_yaml = "model: {}\n";
  state.amp_scaling = GradScalerState{2048.0, 2.0, 0.5, 2000, 17};
  const auto path = dir.path() / "amp.ckpt";
  training::save_checkpoint(path, state, nullptr);
  auto back = training::load_checkpoint(path);
  ASSERT_TRUE(back.amp_scaling.has_value());
  EXPECT_EQ(back.amp_scaling->scale, 2048.0);
  EXPECT_EQ(back.amp_scaling->growth_tracker, 17);
  EXPECT_EQ(back.amp_scaling->growth_interval, 2000);
  // torch's GradScaler.state_dict(): float scale/factors, int interval/tracker.
  auto py = run_python(
      "import sys, torch\n"
      "s = torch.load(sys.argv[1])['MixedPrecision']\n"
      "assert s == {'scale': 2048.0, 'growth_factor': 2.0, 'backoff_factor': 0.5, 'growth_interval': 2000,"
      " '_growth_tracker': 17}, s\n"
      "assert all(isinstance(s[k], float) for k in ('scale', 'growth_factor', 'backoff_factor'))\n"
      "assert all(type(s[k]) is int for k in ('growth_interval', '_growth_tracker'))\n"
      "print('ok')\n",
      {path.string()});
  EXPECT_EQ(py.exit_code, 0) << py.out << py.err;
  // None in a checkpoint without loss scaling.
  state.amp_scaling.reset();
  training::save_checkpoint(path, state, nullptr);
  EXPECT_FALSE(training::load_checkpoint(path).amp_scaling.has_value());
}

}  // namespace
}  // namespace salt::testing
