// Lightning's trainer options as salt users set them: gradient accumulation,
// batch limits (count and fraction), max_steps, validation interval, gradient
// clipping, bf16 mixed precision.
#include "training/fit_support.h"
#include "training/checkpoints/checkpoint.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {
std::vector<std::string> names(const std::vector<fs::path>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) out.push_back(p.filename().string().substr(0, 9));
  return out;
}
bool same_weights(const fs::path& a, const fs::path& b) {
  auto x = training::load_checkpoint(a), y = training::load_checkpoint(b);
  for (std::size_t i = 0; i < x.state_dict.size(); ++i)
    if (!torch::equal(x.state_dict[i].second, y.state_dict[i].second)) return false;
  return true;
}
}  // namespace

TEST_F(FitTest, AccumulationAndFractionalLimitSetTheStepCount) {
  // 2000 jets / 250 = 8 batches; half of them = 4; two batches per step = 2 steps/epoch.
  auto r = salt("fit", small_gn2({"--trainer.max_epochs", "2", "--trainer.limit_train_batches", "0.5",
                                  "--trainer.accumulate_grad_batches", "2", "--trainer.limit_val_batches", "1", "-ls", "acc"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ckpts = checkpoints(dir / "logs" / "GN2_cpu_acc");
  ASSERT_EQ(ckpts.size(), 2u);
  auto state = training::load_checkpoint(ckpts[1]);
  EXPECT_EQ(state.global_step, 4);
  EXPECT_EQ(state.scheduler_total_steps, 4);
}

TEST_F(FitTest, MaxStepsStopsMidEpochAndValidationIntervalIsKept) {
  auto r = salt("fit", small_gn2({"--trainer.max_epochs", "5", "--trainer.max_steps", "3", "-ls", "steps"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ckpts = checkpoints(dir / "logs" / "GN2_cpu_steps");
  ASSERT_EQ(ckpts.size(), 1u);
  EXPECT_EQ(training::load_checkpoint(ckpts[0]).global_step, 3);

  auto v = salt("fit", small_gn2({"--trainer.max_epochs", "3", "--trainer.check_val_every_n_epoch", "2", "-ls", "every2"}));
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(names(checkpoints(dir / "logs" / "GN2_cpu_every2")), (std::vector<std::string>{"epoch=001", "epoch=002"}));
}

TEST_F(FitTest, GradientClippingActsOnTheUpdate) {
  // Adam is invariant to a uniform gradient scale, so clipping by a huge norm changes
  // nothing, while clipping every component to a tiny value (sign-like gradients) does.
  auto base = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "noclip"}));
  auto huge = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "hugenorm", "--trainer.gradient_clip_val", "1e9"}));
  auto tiny = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "tinyvalue", "--trainer.gradient_clip_val",
                                     "1e-6", "--trainer.gradient_clip_algorithm", "value"}));
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_EQ(huge.exit_code, 0) << huge.err;
  ASSERT_EQ(tiny.exit_code, 0) << tiny.err;
  auto ckpt = [&](const std::string& s) { return checkpoints(dir / "logs" / ("GN2_cpu_" + s)).at(0); };
  EXPECT_TRUE(same_weights(ckpt("noclip"), ckpt("hugenorm")));
  EXPECT_FALSE(same_weights(ckpt("noclip"), ckpt("tinyvalue")));
}

TEST_F(FitTest, Bf16MixedTrainsAndSixteenMixedFallsBackOnCpu) {
  auto r = salt("fit", small_gn2({"--trainer.max_epochs", "1", "--trainer.precision", "16-mixed", "-ls", "bf16"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("precision=16-mixed is not supported on CPU; using bf16-mixed"), std::string::npos) << r.err;
  auto state = training::load_checkpoint(checkpoints(dir / "logs" / "GN2_cpu_bf16").at(0));
  for (const auto& [name, t] : state.state_dict)
    if (t.is_floating_point()) EXPECT_EQ(t.scalar_type(), torch::kFloat32) << name;  // master weights stay fp32
  for (const auto& [k, v] : state.metrics) EXPECT_TRUE(std::isfinite(v)) << k;
}

TEST_F(FitTest, DeterministicAlgorithmsChangeNothingOnCpu) {
  auto plain = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "plain"}));
  auto det = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "det", "--trainer.deterministic", "true"}));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(det.exit_code, 0) << det.err;
  EXPECT_TRUE(same_weights(checkpoints(dir / "logs" / "GN2_cpu_plain").at(0), checkpoints(dir / "logs" / "GN2_cpu_det").at(0)));
}

}  // namespace salt::testing
