// The progress bar's figures: the stage's jet-weighted mean loss, the stage and
// whole-run ETAs from seconds per batch, and what is left of a run's plan.
#include "training/outputs/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace salt::training {
namespace {

// Everything Progress wrote to a temporary file (not a terminal: plain lines).
std::string written(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) text += buf;
  return text;
}

TEST(RunLeft, CountsLaterEpochsAndTheValidationsStillToCome) {
  RunSchedule plan;
  plan.max_epochs = 5;
  plan.train_batches = 10;
  plan.val_batches = 4;
  // Training epoch 1 of 0..4: epochs 2, 3, 4 follow; validations after 1, 2, 3, 4.
  auto left = run_left(plan, false, 1, 10);
  EXPECT_EQ(left.train_batches, 30);
  EXPECT_EQ(left.validations, 4);
  EXPECT_EQ(left.val_batches, 4);
  // Validating epoch 1: its validation runs now, 3 more follow.
  left = run_left(plan, true, 1, 20);
  EXPECT_EQ(left.train_batches, 30);
  EXPECT_EQ(left.validations, 3);
  // The last epoch's validation.
  left = run_left(plan, true, 4, 50);
  EXPECT_EQ(left.train_batches, 0);
  EXPECT_EQ(left.validations, 0);
}

TEST(RunLeft, FollowsValEveryMaxStepsAndAccumulation) {
  RunSchedule plan;
  plan.max_epochs = 6;
  plan.train_batches = 10;
  plan.val_batches = 2;
  plan.val_every = 2;
  // Training epoch 0: validations after epochs 1, 3, 5 (every 2nd; 5 is also the last).
  EXPECT_EQ(run_left(plan, false, 0, 0).validations, 3);
  // max_steps 25 with 2 batches per step: 5 steps per epoch, so 5 epochs in all; the
  // last (epoch 4) is validated although 5 % 2 != 0.
  plan.accumulate = 2;
  plan.max_steps = 25;
  auto left = run_left(plan, false, 0, 0);
  EXPECT_EQ(left.train_batches, 40);
  EXPECT_EQ(left.validations, 3);  // after epochs 1, 3, 4
  // No max_epochs: max_steps alone decides.
  plan.max_epochs = -1;
  EXPECT_EQ(run_left(plan, false, 0, 0).train_batches, 40);
}

TEST(Progress, ShowsTheMeanLossAndStageAndRunEtas) {
  std::FILE* out = std::tmpfile();
  double now = 100;
  Progress p(true, 1, out, [&] { return now; });
  p.start("train", 0, 2, 4);
  RunLeft left;
  left.train_batches = 4;  // epoch 1
  left.validations = 2;
  left.val_batches = 3;
  p.set_run_left(left);
  now += 2;  // 2 s per batch, 100 jets per batch
  p.update(0, 1.0, 100);
  now += 2;
  p.update(1, 0.5, 300);  // mean (1.0*100 + 0.5*300) / 400 = 0.625
  EXPECT_DOUBLE_EQ(p.mean_loss(), 0.625);
  // Stage: 2 batches x 2 s. Run: that + 4 train batches x 2 s + 2 x 3 validation
  // batches at the training pace (none measured yet) = 4 + 8 + 12 s.
  EXPECT_DOUBLE_EQ(p.stage_eta(), 4);
  EXPECT_DOUBLE_EQ(p.run_eta(), 24);
  const auto text = written(out);
  EXPECT_NE(text.find("train epoch 0/2 step 2/4 mean loss 0.6250"), std::string::npos) << text;
  EXPECT_NE(text.find("ETA 0:00:04 run 0:00:24"), std::string::npos) << text;

  // A validation measured at 1 s per batch replaces the estimate; the training
  // pace is kept from the stage before.
  p.start("val", 0, 2, 3);
  left = {};
  left.train_batches = 4;
  left.validations = 1;
  left.val_batches = 3;
  p.set_run_left(left);
  now += 1;
  p.update(0, 2.0, 50);
  EXPECT_DOUBLE_EQ(p.run_eta(), 2 * 1 + 4 * 2 + 3 * 1);
  p.finish("val/loss 2.000000");
  EXPECT_NE(written(out).find("val epoch 0/2 done in 0:00:01: val/loss 2.000000"), std::string::npos);
  std::fclose(out);
}

TEST(Progress, ATestStageHasNoEpochAndNoRunEta) {
  std::FILE* out = std::tmpfile();
  double now = 0;
  Progress p(true, 1, out, [&] { return now; });
  p.start("test", 0, 0, 2);
  now += 3;
  p.update(0, 0.25, 10);
  p.finish("10 jets");
  const auto text = written(out);
  EXPECT_NE(text.find("test step 1/2 mean loss 0.2500 3 jets/s ETA 0:00:03\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test done in 0:00:03: 10 jets"), std::string::npos) << text;
  std::fclose(out);
}

TEST(Progress, DisabledWritesNothingButStillAverages) {
  std::FILE* out = std::tmpfile();
  double now = 0;
  Progress p(false, 1, out, [&] { return now; });
  p.start("val", 0, 1, 2);
  now += 1;
  p.update(0, 3.0, 10);
  p.finish("x");
  EXPECT_DOUBLE_EQ(p.mean_loss(), 3.0);
  EXPECT_EQ(written(out), "");
  std::fclose(out);
}

}  // namespace
}  // namespace salt::training
