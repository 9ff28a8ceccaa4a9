// The fit's plan (training/fit_plan.h) on hand-worked numbers: no data, no model,
// no process, milliseconds.
#include "training/fit_plan.h"

#include <gtest/gtest.h>

#include "core/errors.h"

namespace salt::training {
namespace {

using config::BatchLimit;

config::TrainerConfig trainer(int64_t max_epochs, int64_t max_steps = -1, int64_t accumulate = 1) {
  config::TrainerConfig t;
  t.max_epochs = max_epochs;
  t.max_steps = max_steps;
  t.accumulate_grad_batches = accumulate;
  return t;
}

TrainCounts batches(int64_t n, int world = 1) { return TrainCounts{n, n * 40, 40, world}; }

BatchLimit count(double n) { return BatchLimit{BatchLimit::Kind::kCount, n}; }
BatchLimit fraction(double f) { return BatchLimit{BatchLimit::Kind::kFraction, f}; }

TEST(FitPlan, StepsPerEpochRoundUpUnderAccumulation) {
  // 100 batches in rounds of 3: 33 full rounds and one of 1 -> 34 steps per epoch.
  const auto p = plan_training(trainer(2, -1, 3), batches(100), std::nullopt, -1);
  EXPECT_EQ(p.train_batches, 100);
  EXPECT_EQ(p.steps_per_epoch, 34);
  EXPECT_EQ(p.total_steps, 68);
  EXPECT_EQ(p.start_epoch, 0);
  EXPECT_EQ(p.skip_batches, 0);
  EXPECT_EQ(p.schedule_position, -1);
  EXPECT_TRUE(p.shuffle);
}

// BatchSizeFinder's size trains on the schedule Lightning planned at the configured
// size: 2 epochs of 10 batches of 100 planned 20 steps; at 200, 2 x 5 steps of it.
TEST(FitPlan, AFoundBatchSizeKeepsTheConfiguredScheduleAndRefusesMoreSteps) {
  auto p = plan_training(trainer(2), batches(5), std::nullopt, -1);
  keep_configured_schedule(p, 20, 100, 200);
  EXPECT_EQ(p.total_steps, 20);
  EXPECT_EQ(p.steps_per_epoch, 5);
  auto more = plan_training(trainer(2), batches(20), std::nullopt, -1);  // at 50: 40 steps
  try {
    keep_configured_schedule(more, 20, 100, 50);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "BatchSizeFinder: data.batch_size 50 trains 40 optimizer steps, more than the 20 of the one-cycle "
                 "schedule planned before the finder at data.batch_size 100 (as Lightning plans it: salt's OneCycleLR "
                 "would stop the run at step 21); set data.batch_size: 50 without the finder, or trainer.max_steps: 20");
  }
}

TEST(FitPlan, MaxStepsCapsTheScheduleAndLeadsWithoutMaxEpochs) {
  EXPECT_EQ(plan_training(trainer(2, 50, 3), batches(100), std::nullopt, -1).total_steps, 50);
  const auto p = plan_training(trainer(-1, 250), batches(100), std::nullopt, -1);
  EXPECT_EQ(p.max_epochs, -1);
  EXPECT_EQ(p.total_steps, 250);
}

TEST(FitPlan, FastDevRunIsOneEpochOfNBatchesWhateverTheLimits) {
  auto t = trainer(10, 5);
  t.fast_dev_run = 3;
  t.limit_train = count(1);
  const auto p = plan_training(t, batches(100), std::nullopt, -1);
  EXPECT_EQ(p.train_batches, 3);
  EXPECT_EQ(p.max_epochs, 1);
  EXPECT_EQ(p.total_steps, 3);  // max_steps does not cap a dev run
  EXPECT_EQ(plan_training(t, batches(2), std::nullopt, -1).train_batches, 2);
}

TEST(FitPlan, LimitsAsLightningCountsThem) {
  auto t = trainer(1);
  t.limit_train = fraction(0.5);
  EXPECT_EQ(plan_training(t, batches(101), std::nullopt, -1).train_batches, 50);  // floor(50.5)
  t.limit_train = count(7);
  EXPECT_EQ(plan_training(t, batches(101), std::nullopt, -1).train_batches, 7);
  EXPECT_EQ(plan_training(t, batches(5), std::nullopt, -1).train_batches, 5);
}

TEST(FitPlan, OverfitBatchesTrainTheFirstBatchesUnshuffled) {
  auto t = trainer(4);
  t.overfit_batches = count(3);
  t.limit_train = count(50);  // overfit_batches wins, as in Lightning
  const auto p = plan_training(t, batches(100), std::nullopt, -1);
  EXPECT_EQ(p.train_batches, 3);
  EXPECT_FALSE(p.shuffle);
  EXPECT_EQ(p.total_steps, 12);
}

TEST(FitPlan, NoFullBatchIsRefusedNamingTheCounts) {
  try {
    plan_training(trainer(1), TrainCounts{0, 30, 40, 2}, std::nullopt, -1);
    FAIL() << "no batches accepted";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "no training batches: 30 training jets with batch_size 40 over 2 processes (the partial last batch is "
                 "dropped)");
  }
  auto t = trainer(1);
  t.limit_train = fraction(0.001);
  EXPECT_THROW(plan_training(t, batches(100), std::nullopt, -1), UsageError);  // floor(0.1) = 0
}

TEST(FitPlan, ResumeAfterAnEpochContinuesTheSchedule) {
  // 10 steps per epoch, 3 epochs planned; the checkpoint closed epoch 0 at step 10.
  const ResumePoint r{0, 10, -1, 30, -1, 1};
  const auto p = plan_training(trainer(3), batches(10), r, -1);
  EXPECT_EQ(p.start_epoch, 1);
  EXPECT_EQ(p.skip_batches, 0);
  EXPECT_EQ(p.total_steps, 30);
  EXPECT_EQ(p.schedule_position, 10);
  EXPECT_FALSE(p.new_schedule);
  // a recorded scheduler position wins over the step count
  EXPECT_EQ(plan_training(trainer(3), batches(10), ResumePoint{0, 10, -1, 30, 8, 1}, -1).schedule_position, 8);
}

TEST(FitPlan, MidEpochResumeSkipsTheSameShareOfTheEpoch) {
  // Saved by 2 processes after 4 batches each: 8 batches of the epoch's order are done.
  const ResumePoint r{1, 14, 4, 30, -1, 2};
  EXPECT_EQ(plan_training(trainer(3), batches(10), r, -1).skip_batches, 8);
  // 4 processes (5 batches each): 2 batches each
  const auto four = plan_training(trainer(3), batches(5, 4), r, -1);
  EXPECT_EQ(four.skip_batches, 2);
  EXPECT_EQ(four.start_epoch, 1);  // the epoch it was saved in
}

TEST(FitPlan, ResumeLongerThanTheScheduleIsRefusedUpFront) {
  // 2 epochs of 10 steps were planned; asking for 3 leaves 20 steps against 10 left.
  const ResumePoint r{0, 10, -1, 20, -1, 1};
  try {
    plan_training(trainer(3), batches(10), r, -1);
    FAIL() << "a run past its schedule accepted";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("this run would take 20 more optimizer steps"), std::string::npos) << what;
    EXPECT_NE(what.find("schedule has 10 left"), std::string::npos) << what;
    EXPECT_NE(what.find("over this run's 30 steps"), std::string::npos) << what;
  }
  // lrs_config.last_epoch 0: a new schedule over this run's 30 steps, from step 1
  const auto p = plan_training(trainer(3), batches(10), r, 0);
  EXPECT_TRUE(p.new_schedule);
  EXPECT_EQ(p.schedule_position, 1);
  EXPECT_EQ(p.total_steps, 30);
  // max_steps within the old schedule: no refusal
  EXPECT_EQ(plan_training(trainer(3, 20), batches(10), r, -1).total_steps, 20);
}

// The refusal names what made the run longer, as far as the checkpoint's config tells
// (before: always "max_epochs larger than the original run's").
TEST(FitPlan, ALongerResumeNamesWhatChanged) {
  const auto reason = [](const ResumePoint& r, const TrainCounts& c, int64_t epochs) {
    try {
      plan_training(trainer(epochs), c, r, -1);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // Saved by 2 processes (2 epochs of 5 steps), resumed by 1 with 10 batches an epoch.
  const ResumePoint two{0, 5, -1, 10, -1, 2, 2, -1};
  EXPECT_NE(reason(two, batches(10), 2).find("this run has 10 optimizer steps per epoch where the checkpoint's run "
                                             "had 5: 1 process(es) where it had 2"),
            std::string::npos)
      << reason(two, batches(10), 2);
  // The same world, a grown training file.
  const ResumePoint one{0, 5, -1, 10, -1, 1, 2, -1};
  EXPECT_NE(reason(one, batches(7), 2).find("where the checkpoint's run had 5: another batch_size"), std::string::npos)
      << reason(one, batches(7), 2);
  // The same steps per epoch, more epochs.
  EXPECT_NE(reason(one, batches(5), 3).find("trainer.max_epochs 3 where the original run had 2"), std::string::npos)
      << reason(one, batches(5), 3);
  // Nothing known of the saving run (salt's checkpoint): the general reason.
  EXPECT_NE(reason(ResumePoint{0, 5, -1, 10, -1, 1}, batches(7), 2).find("or more steps per epoch"), std::string::npos);
}

TEST(FitPlan, MidEpochStepsLeftCountTheRestOfTheEpoch) {
  // 10 steps per epoch, 2 planned (20); saved after 6 batches of epoch 1 at step 16:
  // 4 steps left in the plan and 4 asked for -> accepted at position 16.
  const ResumePoint r{1, 16, 6, 20, -1, 1};
  const auto p = plan_training(trainer(2), batches(10), r, -1);
  EXPECT_EQ(p.schedule_position, 16);
  EXPECT_EQ(p.skip_batches, 6);
  EXPECT_EQ(p.start_epoch, 1);
}

TEST(FitPlan, ValidationAtEpochEndsByDefault) {
  auto t = trainer(3);
  t.check_val_every_n_epoch = 2;
  const auto train = plan_training(t, batches(10), std::nullopt, -1);
  const auto v = plan_validation(t, 5, train);
  EXPECT_EQ(v.val_batches, 5);
  EXPECT_TRUE(v.at_epoch_end_only());
  EXPECT_FALSE(v.after_batch(1, 4));
  EXPECT_FALSE(v.at_epoch_end(0));
  EXPECT_TRUE(v.at_epoch_end(1));
  EXPECT_TRUE(v.at_epoch_end(2));  // the last epoch always validates
}

TEST(FitPlan, FractionalValCheckIntervalValidatesWithinTheEpoch) {
  auto t = trainer(1);
  t.val_check_interval = fraction(0.25);
  const auto v = plan_validation(t, 5, plan_training(t, batches(10), std::nullopt, -1));
  EXPECT_EQ(v.check_batch, 2);  // floor(2.5)
  EXPECT_TRUE(v.after_batch(0, 1));
  EXPECT_FALSE(v.after_batch(0, 2));
  EXPECT_TRUE(v.after_batch(0, 3));
  EXPECT_TRUE(v.at_epoch_end(0));  // batch 9 is the 10th: a multiple of 2
}

TEST(FitPlan, BatchIntervalAcrossEpochsWhenEveryNEpochIsNull) {
  auto t = trainer(3);
  t.val_check_interval = count(3);
  t.check_val_every_n_epoch = 0;
  const auto v = plan_validation(t, 5, plan_training(t, batches(10), std::nullopt, -1));
  EXPECT_FALSE(v.after_batch(1, 0));  // iteration 10
  EXPECT_TRUE(v.after_batch(1, 1));   // iteration 11: the 12th batch
  EXPECT_FALSE(v.at_epoch_end(0));    // the 10th batch
  EXPECT_TRUE(v.at_epoch_end(2));     // the 30th
}

TEST(FitPlan, BatchIntervalLongerThanAnEpochIsRefused) {
  auto t = trainer(3);
  t.val_check_interval = count(30);
  const auto train = plan_training(t, batches(10), std::nullopt, -1);
  EXPECT_THROW(plan_validation(t, 5, train), UsageError);
  t.check_val_every_n_epoch = 0;
  EXPECT_EQ(plan_validation(t, 5, train).check_batch, 30);
}

// Lightning trains on without validating then (check_val_every_n_epoch None skips its
// "val_check_interval must be less than or equal to the number of the training
// batches" check); salt-cpp refuses, unless something else ends the run with a
// validation (max_steps) or validation is off.
TEST(FitPlan, ValidationThatNeverComesIsRefused) {
  auto t = trainer(3);
  t.check_val_every_n_epoch = 0;
  t.val_check_interval = count(31);  // the run has 30 batches
  EXPECT_THROW(plan_validation(t, 5, plan_training(t, batches(10), std::nullopt, -1)), UsageError);
  t.val_check_interval = count(30);  // the last batch
  EXPECT_EQ(plan_validation(t, 5, plan_training(t, batches(10), std::nullopt, -1)).check_batch, 30);
  t.val_check_interval = count(1000000);
  t.max_steps = 25;  // a run stopped by max_steps validates before it ends
  EXPECT_NO_THROW(plan_validation(t, 5, plan_training(t, batches(10), std::nullopt, -1)));
  t.max_steps = -1;
  t.limit_val = count(0);  // no validation asked for
  EXPECT_NO_THROW(plan_validation(t, 5, plan_training(t, batches(10), std::nullopt, -1)));
  t.limit_val = BatchLimit{};
  t.max_epochs = -1;  // no end: the interval comes
  t.max_steps = -1;
  EXPECT_NO_THROW(plan_validation(t, 5, plan_training(t, batches(10), std::nullopt, -1)));

  // Every 4th of 3 epochs, within the epoch: never. Once per epoch at its end: the
  // last epoch validates anyway.
  auto every = trainer(3);
  every.check_val_every_n_epoch = 4;
  every.val_check_interval = fraction(0.5);
  EXPECT_THROW(plan_validation(every, 5, plan_training(every, batches(10), std::nullopt, -1)), UsageError);
  every.val_check_interval = BatchLimit{};
  EXPECT_NO_THROW(plan_validation(every, 5, plan_training(every, batches(10), std::nullopt, -1)));
}

TEST(FitPlan, NoValidationBatchesMeansNoValidation) {
  auto t = trainer(2);
  t.limit_val = count(0);
  const auto v = plan_validation(t, 5, plan_training(t, batches(10), std::nullopt, -1));
  EXPECT_EQ(v.val_batches, 0);
  EXPECT_FALSE(v.at_epoch_end(1));
  t.fast_dev_run = 2;
  t.limit_val = BatchLimit{};
  EXPECT_EQ(plan_validation(t, 5, plan_training(t, batches(10), std::nullopt, -1)).val_batches, 2);
}

}  // namespace
}  // namespace salt::training
