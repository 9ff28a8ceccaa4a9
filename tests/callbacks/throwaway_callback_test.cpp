// A callback defined and registered in this one file shows up everywhere a
// shipped callback does: `salt fit --help`, --print_config (its defaults filled
// in), validation errors (unknown init_args keys with did-you-mean), and a fit,
// whose hooks it counts.
#include <gtest/gtest.h>

#include "training/callback_registry.h"
#include "core/errors.h"
#include "support/in_process.h"
#include "training/loop/fit.h"

namespace salt::testing {
namespace {

struct Counts {
  int setup = 0, fit_start = 0, train_epochs = 0, train_batches = 0, val_epochs = 0, metrics = 0, validations = 0,
      checkpoints = 0, fit_end = 0;
  int64_t last_step = 0;
};
Counts counts;

struct CountingOptions {
  std::string label = "counted";
  int64_t weight = 1;
};

const config::Binding<CountingOptions>& binding() {
  static const auto b = config::Binding<CountingOptions>({})
                            .arg("label", SALT_FIELD(label), "A name for the counts.")
                            .arg("weight", SALT_FIELD(weight), "How much each hook counts.", config::at_least(config::t_int(), 1));
  return b;
}

class CountingCallback : public callbacks::Callback {
 public:
  explicit CountingCallback(CountingOptions o) : w_(static_cast<int>(o.weight)) {}
  void on_setup(callbacks::FitState&) override { counts.setup += w_; }
  void on_fit_start(callbacks::FitState& s) override {
    counts.fit_start += w_;
    EXPECT_TRUE(std::filesystem::exists(s.run_dir / "config.yaml"));  // run files are written by then
  }
  void on_epoch_start(callbacks::FitState&, const std::string& stage, int64_t) override {
    (stage == "train" ? counts.train_epochs : counts.val_epochs) += w_;
  }
  void on_batch_end(callbacks::FitState&, const std::string& stage, int64_t, const torch::Tensor&, int64_t) override {
    if (stage == "train") counts.train_batches += w_;
  }
  void on_metrics(callbacks::FitState&, const callbacks::Metrics&) override { counts.metrics += w_; }
  void on_validation_end(callbacks::FitState& s) override {
    counts.validations += w_;
    EXPECT_TRUE(s.metrics.val.count("val/loss"));
  }
  void on_checkpoint_saved(callbacks::FitState&, const std::filesystem::path& p) override {
    counts.checkpoints += w_;
    EXPECT_TRUE(std::filesystem::exists(p));
  }
  void on_fit_end(callbacks::FitState& s) override {
    counts.fit_end += w_;
    counts.last_step = s.global_step;
  }

 private:
  int w_;
};

const bool kRegistered = callbacks::register_callback(
    {{"salt_tests.CountingCallback", "callback", binding().type(), "Counts the fit hooks (a test's own callback)."},
     [](const YAML::Node& args) { return std::make_unique<CountingCallback>(binding().read(args)); }});

const char* kAppend = "--trainer.callbacks+={class_path: salt_tests.CountingCallback, init_args: {weight: 2}}";

TEST(ThrowawayCallback, IsListedInHelpWithItsDefaults) {
  const auto help = config::run_help("fit");
  const auto at = help.find("salt_tests.CountingCallback  [callback] Counts the fit hooks");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(help.find("--init_args.weight int >= 1  (default: 1)", at), std::string::npos);
  EXPECT_NE(help.find("--init_args.label str  (default: counted)", at), std::string::npos);
}

TEST(ThrowawayCallback, PrintConfigFillsItsDefaults) {
  auto r = InProcessRun::resolve({"-c", InProcessRun::repo_config("DL1.yaml"), kAppend});
  auto cbs = r.config["trainer"]["callbacks"];
  ASSERT_EQ(cbs.size(), 6u);
  EXPECT_EQ(cbs[5]["class_path"].Scalar(), "salt_tests.CountingCallback");
  EXPECT_EQ(cbs[5]["init_args"]["weight"].Scalar(), "2");
  EXPECT_EQ(cbs[5]["init_args"]["label"].Scalar(), "counted");
  EXPECT_NE(config::to_yaml(r.config).find("class_path: salt_tests.CountingCallback"), std::string::npos);
}

TEST(ThrowawayCallback, ValidationNamesItsKeys) {
  const std::string typo = "--trainer.callbacks+={class_path: salt_tests.CountingCallback, init_args: {wieght: 2}}";
  try {
    InProcessRun::resolve({"-c", InProcessRun::repo_config("DL1.yaml"), typo});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'trainer.callbacks.5.init_args.wieght': unknown key"), std::string::npos) << what;
    EXPECT_NE(what.find("did you mean 'weight'?"), std::string::npos) << what;
  }
  const std::string zero = "--trainer.callbacks+={class_path: salt_tests.CountingCallback, init_args: {weight: 0}}";
  EXPECT_THROW(InProcessRun::resolve({"-c", InProcessRun::repo_config("DL1.yaml"), zero}), UsageError);
}

TEST(ThrowawayCallback, SeesEveryHookOfAFit) {
  InProcessRun run;
  counts = {};
  auto r = InProcessRun::resolve({"-c", InProcessRun::repo_config("DL1.yaml"), "--data.batch_size", "250",
                                  "--data.num_workers", "0", "--trainer.max_epochs", "2", "--trainer.log_every_n_steps",
                                  "2", "--trainer.enable_progress_bar", "false", kAppend});
  auto result = training::fit(r);
  // weight 2: every hook counts twice. 1000 jets / 250 = 4 batches per epoch, 2 epochs.
  EXPECT_EQ(counts.setup, 2);
  EXPECT_EQ(counts.fit_start, 2);
  EXPECT_EQ(counts.train_epochs, 2 * 2);
  EXPECT_EQ(counts.train_batches, 2 * 8);
  EXPECT_EQ(counts.val_epochs, 2 * 2);
  EXPECT_EQ(counts.validations, 2 * 2);
  EXPECT_EQ(counts.metrics, 2 * (4 + 2));  // a train interval every 2 steps, one per validation
  EXPECT_EQ(counts.checkpoints, 2 * 2);    // base.yaml's Checkpoint saves after each validation
  EXPECT_EQ(counts.fit_end, 2);
  EXPECT_EQ(counts.last_step, 8);
  EXPECT_EQ(result.checkpoints.size(), 2u);
}

}  // namespace
}  // namespace salt::testing
