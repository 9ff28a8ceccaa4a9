// Lightning's tuners as callbacks (LearningRateFinder, BatchSizeFinder), on real
// fits of salt's DL1 on toy data (1000 training jets, batches of 250): what they
// find, checked by hand or against torch, and what their trials leave of the run
// as Lightning leaves it (the draws against the real salt: training.salt_training_parity_tuners).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "dl1_fit.h"
#include "support/in_process.h"
#include "training/checkpoints/checkpoint.h"
#include "training/loop/fit.h"

namespace salt::testing {
namespace {
namespace fs = std::filesystem;

std::string callback(const std::string& name, const std::string& init_args) {
  return "--trainer.callbacks+={class_path: lightning.pytorch.callbacks." + name + ", init_args: {" + init_args + "}}";
}

struct Sweep {
  std::vector<double> lrs, losses;
};

Sweep read_sweep(const fs::path& csv) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "lr,loss");
  Sweep s;
  while (std::getline(in, line)) {
    const auto comma = line.find(',');
    s.lrs.push_back(std::stod(line.substr(0, comma)));
    s.losses.push_back(std::stod(line.substr(comma + 1)));
  }
  return s;
}

YAML::Node run_config(const training::FitResult& r) { return YAML::LoadFile((r.run_dir / "config.yaml").string()); }

TEST(LearningRateFinder, SweepsTheLearningRateThenTrainsExactlyAsWithoutIt) {
  InProcessRun run;
  const auto plain = fit("plain", {"--trainer.max_epochs", "5"});
  // 20 steps over five epochs of 4 batches: the trial goes on into the next epochs.
  const auto tuned = fit("lrf", {"--trainer.max_epochs", "5",
                                 callback("LearningRateFinder", "min_lr: 1.0e-6, max_lr: 0.01, num_training_steps: 20, "
                                                                "early_stop_threshold: null, update_attr: false")});
  EXPECT_TRUE(same_weights(plain.checkpoints.back(), tuned.checkpoints.back()));
  EXPECT_EQ(plain.global_step, tuned.global_step);
  const auto sweep = read_sweep(tuned.run_dir / "lr_find.csv");
  ASSERT_EQ(sweep.lrs.size(), 20u);
  EXPECT_DOUBLE_EQ(sweep.lrs[0], 1e-6);
  EXPECT_DOUBLE_EQ(sweep.lrs[1], 1e-6 * std::pow(1e4, 2.0 / 20));
  EXPECT_DOUBLE_EQ(sweep.lrs[19], 0.01);
  for (double loss : sweep.losses) EXPECT_TRUE(std::isfinite(loss) && loss > 0);
  EXPECT_TRUE(fs::exists(tuned.run_dir / "lr_find.png"));
  EXPECT_TRUE(fs::exists(tuned.run_dir / "lr_find.pdf"));
  // update_attr false: the schedule is the configured one.
  EXPECT_EQ(run_config(tuned)["model"]["lrs_config"]["max"].as<double>(),
            run_config(plain)["model"]["lrs_config"]["max"].as<double>());
  // As Lightning's loop, a trial ends with trainer.max_epochs: 2 epochs of 4 batches.
  const auto short_run = fit("lrf2", {"--trainer.max_epochs", "2",
                                      callback("LearningRateFinder", "min_lr: 1.0e-6, max_lr: 0.01, num_training_steps: 20, "
                                                                     "early_stop_threshold: null, update_attr: false")});
  EXPECT_EQ(read_sweep(short_run.run_dir / "lr_find.csv").lrs.size(), 8u);
}

TEST(LearningRateFinder, TrainsWithTheSuggestionTorchGradientAgreesWith) {
  InProcessRun run;
  // batches of 25: 40 steps in the epoch, within which the trial's 30 run (as Lightning's, within max_epochs)
  const auto r = fit("lrset", {"--trainer.max_epochs", "1", "--data.batch_size", "25",
                               callback("LearningRateFinder", "min_lr: 1.0e-5, max_lr: 0.1, num_training_steps: 30, "
                                                              "attr_name: lrs_config.max")});
  const auto sweep = read_sweep(r.run_dir / "lr_find.csv");
  ASSERT_GE(sweep.lrs.size(), 13u);
  // Lightning's suggestion() in torch on the saved sweep; salt (PyYAML) reads
  // config.yaml's new max as that float, and the run trained with it.
  const auto py = run_python(R"(
import sys, csv, torch, yaml
rows = list(csv.DictReader(open(sys.argv[1])))
lrs = [float(r["lr"]) for r in rows]; losses = torch.tensor([float(r["loss"]) for r in rows][10:-1])
x = torch.tensor(lrs[10:-1]); finite = torch.isfinite(losses)
g = torch.gradient(losses[finite], spacing=[x[finite]])[0]
idx = torch.arange(len(lrs))[10:-1][finite][torch.argmin(g).item()].item()
written = yaml.safe_load(open(sys.argv[2]))["model"]["lrs_config"]["max"]
assert isinstance(written, float) and written == lrs[idx], (written, lrs[idx])
# The run trained with it: the one-cycle schedule's peak in the checkpoint's optimizer (OneCycleLR's max_lr).
trained = torch.load(sys.argv[3], map_location="cpu")["optimizer_states"][0]["param_groups"][0]["max_lr"]
assert trained == lrs[idx], (trained, lrs[idx])
print(repr(lrs[idx]))
)",
                             {(r.run_dir / "lr_find.csv").string(), (r.run_dir / "config.yaml").string(),
                              r.checkpoints.back().string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  const double suggested = std::stod(py.out);
  const auto config = run_config(r);
  EXPECT_EQ(config["model"]["lrs_config"]["max"].as<double>(), suggested);
  EXPECT_NE(suggested, YAML::LoadFile(InProcessRun::repo_config("base.yaml"))["model"]["lrs_config"]["max"].as<double>());
}

TEST(LearningRateFinder, StopsWhenTheLossDivergesAndRefusesAnUpdateItCannotPlace) {
  InProcessRun run;
  const auto r = fit("lrdiv", {"--trainer.max_epochs", "1", "--data.batch_size", "20",
                               callback("LearningRateFinder", "min_lr: 1.0e-3, max_lr: 1000.0, num_training_steps: 40, "
                                                              "update_attr: false")});
  const auto sweep = read_sweep(r.run_dir / "lr_find.csv");
  ASSERT_LT(sweep.lrs.size(), 40u);  // stopped early
  const double best = *std::min_element(sweep.losses.begin(), sweep.losses.end() - 1);
  EXPECT_GT(sweep.losses.back(), 4 * best);
  // Lightning's default update_attr with no attr_name: salt's model has no lr attribute.
  try {
    fit("lrbad", {"--trainer.max_epochs", "1", callback("LearningRateFinder", "")});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("attr_name: lrs_config.max"), std::string::npos) << e.what();
  }
}

TEST(BatchSizeFinder, DoublesUntilTheTrainingSetRunsOutAndTheRunTrainsAtThatSize) {
  InProcessRun run;
  // power: 2, 4, ..., 512 fit; 1024 has no full batch of the 1000 jets -> 512.
  const auto r = fit("bsf", {"--trainer.max_epochs", "2", callback("BatchSizeFinder", "steps_per_trial: 1")});
  EXPECT_EQ(run_config(r)["data"]["batch_size"].as<int>(), 512);
  EXPECT_EQ(r.global_step, 2);  // one batch of 512 per epoch
  // on the one-cycle schedule Lightning planned before the finder: 2 epochs of 4 batches of 250
  EXPECT_EQ(training::load_checkpoint(r.checkpoints.back()).scheduler_total_steps, 8);
  // max_val caps the search (Lightning stops at it untried): 2 ... 32, then 64.
  const auto capped = fit("bsfcap", {"--trainer.max_epochs", "1", "--data.batch_size", "32",
                                     callback("BatchSizeFinder", "steps_per_trial: 1, max_val: 64")});
  EXPECT_EQ(run_config(capped)["data"]["batch_size"].as<int>(), 64);
  EXPECT_EQ(capped.global_step, 15);  // 1000 / 64, of the 31 steps planned at batch 32
  EXPECT_EQ(training::load_checkpoint(capped.checkpoints.back()).scheduler_total_steps, 31);
  // More steps than the schedule planned at the configured size has: refused before
  // training, where salt's OneCycleLR would stop the run at step 5.
  try {
    fit("bsfshort", {"--trainer.max_epochs", "1", callback("BatchSizeFinder", "steps_per_trial: 1, max_val: 64")});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("data.batch_size 64 trains 15 optimizer steps, more than the 4 of the "
                                         "one-cycle schedule planned before the finder at data.batch_size 250"),
              std::string::npos)
        << e.what();
  }
  // A resumed run keeps its batch size: the finder is skipped.
  const auto resumed = fit("bsfres", {"--trainer.max_epochs", "2", "--ckpt_path", capped.checkpoints.back().string(),
                                      "--model.lrs_config.last_epoch", "0", callback("BatchSizeFinder", "")});
  EXPECT_EQ(run_config(resumed)["data"]["batch_size"].as<int>(), 250);
}

TEST(BatchSizeFinder, BinsearchNarrowsToTheLargestSizeThenTakesTheMargin) {
  InProcessRun run;
  // 2 ... 512 fit, 1024 has no full batch; the search between: 768, 896, 960, 992
  // fit, 1008 not, 1000 fits and is the whole training set, which ends the search
  // (Lightning's dataset check) -> 1000, less the 5 % margin: 950.
  const auto r =
      fit("bsfbin", {"--trainer.max_epochs", "1", callback("BatchSizeFinder", "mode: binsearch, steps_per_trial: 1")});
  EXPECT_EQ(run_config(r)["data"]["batch_size"].as<int>(), 950);
  EXPECT_EQ(r.global_step, 1);
}

TEST(BatchSizeFinder, IsSkippedUnderFastDevRun) {
  InProcessRun run;
  const auto r = fit("bsfdev", {"--trainer.fast_dev_run", "2", callback("BatchSizeFinder", "")});
  EXPECT_EQ(r.global_step, 2);  // two batches of 250, not of a found size
}

}  // namespace
}  // namespace salt::testing
