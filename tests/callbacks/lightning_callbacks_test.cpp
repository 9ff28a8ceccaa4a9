// Lightning's callbacks and trainer options salt users add to their configs
// (EarlyStopping, ModelCheckpoint, Timer / max_time, min_epochs,
// val_check_interval), each shown by its effect on a real fit of salt's DL1 on
// toy data (1000 jets, batches of 250: 4 optimizer steps per epoch) and by a
// resume that carries its state, as Lightning's does.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "core/errors.h"
#include "dl1_fit.h"
#include "support/in_process.h"
#include "training/checkpoints/checkpoint.h"
#include "training/loop/fit.h"

namespace salt::testing {
namespace {
namespace fs = std::filesystem;

const serialize::PyValue& callback_state(const training::CheckpointState& s, const std::string& key) {
  for (const auto& [k, v] : s.callback_states)
    if (k == key) return v;
  throw std::runtime_error("no callback state '" + key + "'");
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

const char* kEarlyStop = "lightning.pytorch.callbacks.EarlyStopping";
const char* kEsKey = "EarlyStopping{'monitor': 'val/loss', 'mode': 'min'}";

// min_delta 100 on a loss near 1: only the first validation counts as an
// improvement, so patience 2 stops after the third epoch.
std::string early_stopping(int patience) {
  return std::string("--trainer.callbacks+={class_path: ") + kEarlyStop +
         ", init_args: {monitor: val/loss, min_delta: 100, patience: " + std::to_string(patience) + "}}";
}

TEST(EarlyStopping, StopsOnAPlateauAfterPatienceAndWaitsForMinEpochs) {
  InProcessRun run;
  auto r = fit("es", {"--trainer.max_epochs", "10", early_stopping(2)});
  EXPECT_EQ(r.epochs_run, 3);
  EXPECT_EQ(r.global_step, 12);
  const auto last = training::load_checkpoint(r.checkpoints.back());
  const auto& es = callback_state(last, kEsKey);
  EXPECT_EQ(es.find("wait_count")->as_int(), 2);
  EXPECT_EQ(es.find("stopped_epoch")->as_int(), 2);
  EXPECT_EQ(es.find("patience")->as_int(), 2);
  EXPECT_EQ(es.find("stopping_reason")->as_int(), 3);  // PATIENCE_EXHAUSTED
  // best_score: the first validation's loss, as a float32 tensor
  const auto first = training::load_checkpoint(r.checkpoints.front());
  double first_loss = 0;
  for (const auto& [k, v] : first.metrics)
    if (k == "val/loss") first_loss = v;
  EXPECT_FLOAT_EQ(es.find("best_score")->as_tensor().item<float>(), static_cast<float>(first_loss));
  EXPECT_EQ(es.find("best_score")->as_tensor().scalar_type(), torch::kFloat);

  auto min = fit("esmin", {"--trainer.max_epochs", "10", "--trainer.min_epochs", "5", early_stopping(2)});
  EXPECT_EQ(min.epochs_run, 5);
  auto min_steps = fit("esminsteps", {"--trainer.max_epochs", "10", "--trainer.min_steps", "14", early_stopping(2)});
  EXPECT_EQ(min_steps.global_step, 14);  // stops within the fourth epoch once min_steps is met
}

TEST(EarlyStopping, ResumeContinuesItsPatienceCount) {
  InProcessRun run;
  // Two epochs: the first improves, the second waits (wait_count 1 of 3).
  auto first = fit("esa", {"--trainer.max_epochs", "2", early_stopping(3)});
  ASSERT_EQ(first.epochs_run, 2);
  EXPECT_EQ(callback_state(training::load_checkpoint(first.checkpoints.back()), kEsKey).find("wait_count")->as_int(), 1);
  // Resumed, two more waits reach patience 3: stops after epoch 3 (a fresh count would run to epoch 5).
  // (--model.lrs_config.last_epoch 0: a new schedule for the longer run, as salt's guide resumes past a finished one)
  auto resumed = fit("esb", {"--trainer.max_epochs", "10", "--ckpt_path", first.checkpoints.back().string(),
                             "--model.lrs_config.last_epoch", "0", early_stopping(3)});
  EXPECT_EQ(resumed.global_step, 16);
}

TEST(EarlyStopping, AMonitorThatIsNotLoggedIsOneClearError) {
  InProcessRun run;
  try {
    fit("esbad", {"--trainer.max_epochs", "3", std::string("--trainer.callbacks+={class_path: ") + kEarlyStop +
                                                   ", init_args: {monitor: val/los}}"});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("monitor 'val/los' is not a logged metric"), std::string::npos) << what;
    EXPECT_NE(what.find("val/loss"), std::string::npos) << what;
  }
  // strict: false skips the check and trains on.
  auto r = fit("eslax", {"--trainer.max_epochs", "2", std::string("--trainer.callbacks+={class_path: ") + kEarlyStop +
                                                         ", init_args: {monitor: val/los, strict: false}}"});
  EXPECT_EQ(r.epochs_run, 2);
}

std::string model_checkpoint(const std::string& init_args) {
  return "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.ModelCheckpoint, init_args: {" + init_args + "}}";
}

TEST(ModelCheckpoint, KeepsTheTopKByTheMonitorAndLastBesideSaltsCheckpoints) {
  InProcessRun run;
  auto r = fit("mc", {"--trainer.max_epochs", "4",
                      model_checkpoint("monitor: val/loss, save_top_k: 2, save_last: true, filename: '{epoch:02d}-{step}'")});
  // The val/loss of each epoch, from salt's own checkpoints (in ckpts/).
  std::vector<float> loss(4);
  for (const auto& p : files_in(r.run_dir / "ckpts")) {
    const auto s = training::load_checkpoint(r.run_dir / "ckpts" / p);
    for (const auto& [k, v] : s.metrics)
      if (k == "val/loss") loss.at(static_cast<std::size_t>(s.epoch)) = static_cast<float>(v);
  }
  auto name = [](int epoch) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "epoch=%02d-step=%d.ckpt", epoch, 4 * (epoch + 1));
    return std::string(buf);
  };
  // Ranked by hand: the two lowest losses are kept; last.ckpt is rewritten at each
  // top-k save (Lightning 2.6 writes it only when a top-k file was saved).
  std::vector<int> by_loss{0, 1, 2, 3};
  std::stable_sort(by_loss.begin(), by_loss.end(), [&](int a, int b) { return loss[a] < loss[b]; });
  int last_saved = 1;  // the first two epochs always enter the top 2
  for (int e = 2; e < 4; ++e) {
    std::vector<float> before(loss.begin(), loss.begin() + e);
    std::sort(before.begin(), before.end());
    if (loss[e] < before[1]) last_saved = e;
  }
  std::vector<std::string> expected{name(by_loss[0]), name(by_loss[1]), "last.ckpt"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(files_in(r.run_dir / "checkpoints"), expected);
  const auto last = training::load_checkpoint(r.run_dir / "checkpoints" / "last.ckpt");
  EXPECT_EQ(last.global_step, 4 * (last_saved + 1));
  const auto& mc = callback_state(last, "ModelCheckpoint{'monitor': 'val/loss', 'mode': 'min', 'every_n_train_steps': 0, "
                                        "'every_n_epochs': 1, 'train_time_interval': None}");
  // Its state as of that save: the best of the epochs up to it.
  int best = 0;
  for (int e = 1; e <= last_saved; ++e)
    if (loss[e] < loss[best]) best = e;
  EXPECT_EQ(mc.find("best_model_path")->as_str(), (r.run_dir / "checkpoints" / name(best)).string());
  EXPECT_FLOAT_EQ(mc.find("best_model_score")->as_tensor().item<float>(), loss[best]);
  EXPECT_EQ(mc.find("best_k_models")->entries().size(), 2u);
  EXPECT_EQ(mc.find("last_model_path")->as_str(), (r.run_dir / "checkpoints" / "last.ckpt").string());
}

TEST(ModelCheckpoint, EveryNTrainStepsSavesMidEpochStatesThatResumeExactly) {
  InProcessRun run;
  auto whole = fit("steps", {"--trainer.max_epochs", "2", model_checkpoint("every_n_train_steps: 3, save_top_k: -1")});
  EXPECT_EQ(files_in(whole.run_dir / "checkpoints"),
            (std::vector<std::string>{"epoch=0-step=3.ckpt", "epoch=1-step=6.ckpt"}));
  const auto step3 = whole.run_dir / "checkpoints" / "epoch=0-step=3.ckpt";
  const auto mid = training::load_checkpoint(step3);
  EXPECT_EQ(mid.global_step, 3);
  EXPECT_EQ(mid.batch_in_epoch, 3);
  // Resumed from step 3 (within epoch 0), the run ends with the uninterrupted run's weights.
  auto resumed = fit("stepsb", {"--trainer.max_epochs", "2", "--ckpt_path", step3.string()});
  EXPECT_EQ(resumed.global_step, 8);
  EXPECT_TRUE(same_weights(whole.checkpoints.back(), resumed.checkpoints.back()));
}

TEST(ModelCheckpoint, AResumedRunKeepsRankingTheSameFiles) {
  InProcessRun run;
  const auto dir = run.dir() / "best";
  const auto mc = model_checkpoint("dirpath: " + dir.string() + ", monitor: val/loss, save_top_k: 1, save_last: true");
  auto first = fit("rank", {"--trainer.max_epochs", "2", mc});
  ASSERT_EQ(files_in(dir).size(), 2u);  // the best and last.ckpt
  // Resumed from last.ckpt: its state names the best so far and last.ckpt, so the
  // resumed run replaces them instead of adding last-v1.ckpt and a second "best".
  auto resumed = fit("rankb", {"--trainer.max_epochs", "4", "--ckpt_path", (dir / "last.ckpt").string(),
                               "--model.lrs_config.last_epoch", "0", mc});
  EXPECT_EQ(files_in(dir).size(), 2u) << ::testing::PrintToString(files_in(dir));
  EXPECT_TRUE(fs::exists(dir / "last.ckpt"));
}

TEST(ModelCheckpoint, RefusesWhatLightningRefuses) {
  InProcessRun run;
  EXPECT_THROW(fit("bad1", {"--trainer.max_epochs", "1", model_checkpoint("save_top_k: 3")}), UsageError);
  EXPECT_THROW(fit("bad2", {"--trainer.max_epochs", "1", "--trainer.enable_checkpointing", "false", model_checkpoint("")}),
               UsageError);
  EXPECT_THROW(fit("bad3", {"--trainer.max_epochs", "1", model_checkpoint("filename: '{epoch:.2q}'")}), UsageError);
}

TEST(Timer, MaxTimeStopsTheRunAndAResumeCountsOnFromItsTime) {
  InProcessRun run;
  // A microsecond: the time is up after the first step; the run validates and checkpoints.
  auto first = fit("time", {"--trainer.max_epochs", "3", "--trainer.max_time", "{microseconds: 1}"});
  EXPECT_EQ(first.global_step, 1);
  ASSERT_EQ(first.checkpoints.size(), 1u);
  const auto saved = training::load_checkpoint(first.checkpoints.back());
  const double trained = callback_state(saved, "Timer").find("time_elapsed")->find("train")->as_number();
  EXPECT_GT(trained, 0);
  // Resumed with the same limit: already spent, so nothing more is trained.
  auto spent = fit("timeb", {"--trainer.max_epochs", "3", "--trainer.max_time", "{microseconds: 1}", "--ckpt_path",
                             first.checkpoints.back().string()});
  EXPECT_EQ(spent.global_step, 1);
  EXPECT_TRUE(spent.checkpoints.empty());
  // With an hour, it trains the remaining epochs and its clock starts at the first run's time.
  auto rest = fit("timec", {"--trainer.max_epochs", "3", "--trainer.max_time", "00:01:00:00", "--ckpt_path",
                            first.checkpoints.back().string()});
  EXPECT_EQ(rest.global_step, 1 + 2 * 4);
  const auto end = training::load_checkpoint(rest.checkpoints.back());
  EXPECT_GT(callback_state(end, "Timer").find("time_elapsed")->find("train")->as_number(), trained);

  try {
    fit("timebad", {"--trainer.max_time", "1:00"});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'trainer.max_time' is not a valid duration: '1:00' (expected DD:HH:MM:SS)"),
              std::string::npos)
        << e.what();
  }
}

TEST(ValCheckInterval, ValidatesWithinTheEpochAndItsCheckpointsResumeThere) {
  InProcessRun run;
  auto half = fit("half", {"--trainer.max_epochs", "2", "--trainer.val_check_interval", "0.5"});
  // After batches 2 and 4 of each epoch: four validations, each checkpointed by salt's Checkpoint.
  ASSERT_EQ(half.checkpoints.size(), 4u);
  const auto mid = training::load_checkpoint(half.checkpoints[0]);
  EXPECT_EQ(mid.global_step, 2);
  EXPECT_EQ(mid.batch_in_epoch, 2);
  auto resumed = fit("halfb", {"--trainer.max_epochs", "2", "--trainer.val_check_interval", "0.5", "--ckpt_path",
                               half.checkpoints[0].string()});
  EXPECT_TRUE(same_weights(half.checkpoints.back(), resumed.checkpoints.back()));

  // A count across epochs (check_val_every_n_epoch null): after batches 3 and 6 of the 8.
  auto across = fit("across", {"--trainer.max_epochs", "2", "--trainer.val_check_interval", "3",
                               "--trainer.check_val_every_n_epoch", "null"});
  ASSERT_EQ(across.checkpoints.size(), 2u);
  EXPECT_EQ(training::load_checkpoint(across.checkpoints[1]).global_step, 6);

  EXPECT_THROW(fit("toomany", {"--trainer.max_epochs", "1", "--trainer.val_check_interval", "5"}), UsageError);
}

}  // namespace
}  // namespace salt::testing

namespace salt::testing {
namespace {

TEST(OverfitBatches, TrainsTheSameFirstBatchesInFileOrderEveryEpoch) {
  InProcessRun run;
  // Only the first 2 batches (500 jets) are read, so how many jets the file offers
  // beyond them cannot change the weights; shuffled training would (its order depends on it).
  auto all = fit("of", {"--trainer.max_epochs", "2", "--trainer.overfit_batches", "2"});
  auto fewer = fit("ofb", {"--trainer.max_epochs", "2", "--trainer.overfit_batches", "2", "--data.num_train", "600"});
  EXPECT_EQ(all.global_step, 4);
  EXPECT_TRUE(same_weights(all.checkpoints.back(), fewer.checkpoints.back()));
  auto shuffled = fit("ofc", {"--trainer.max_epochs", "2", "--trainer.limit_train_batches", "2"});
  auto shuffled_fewer = fit("ofd", {"--trainer.max_epochs", "2", "--trainer.limit_train_batches", "2", "--data.num_train", "600"});
  EXPECT_FALSE(same_weights(shuffled.checkpoints.back(), shuffled_fewer.checkpoints.back()));
}

TEST(RichCallbacks, RichProgressBarAndModelSummaryStandInForLightningsDefaults) {
  InProcessRun run;
  // configs/base.yaml lists TQDMProgressBar and ModelSummary: replacing the list with
  // the rich ones trains; appending a second progress bar is refused, as in Lightning.
  const std::string rich = "--trainer.callbacks=[{class_path: salt.callbacks.Checkpoint, init_args: {monitor_loss: val/loss}}, "
                           "{class_path: lightning.pytorch.callbacks.RichProgressBar, init_args: {refresh_rate: 2, leave: true}}, "
                           "{class_path: lightning.pytorch.callbacks.RichModelSummary, init_args: {max_depth: 2}}]";
  EXPECT_EQ(fit("rich", {"--trainer.max_epochs", "1", rich}).global_step, 4);
  try {
    fit("twobars", {"--trainer.max_epochs", "1", "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.RichProgressBar}"});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("trainer.callbacks has 2 progress bars"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace salt::testing

namespace salt::testing {
namespace {

// The row of `action` in a profiler report: its cells (action, mean, calls, total, share).
std::vector<std::string> profile_row(const std::string& report, const std::string& action) {
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("|  " + action + " ", 0) != 0 && line.rfind("|  " + action + "\t", 0) != 0) continue;
    std::vector<std::string> cells;
    std::istringstream parts(line.substr(1));
    for (std::string cell; std::getline(parts, cell, '|');) {
      const auto first = cell.find_first_not_of(" \t"), last = cell.find_last_not_of(" \t");
      cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
    }
    return cells;
  }
  return {};
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(Profiler, SimpleReportsEachStageAndCallbackHook) {
  InProcessRun run;
  auto r = fit("prof", {"--trainer.max_epochs", "2", "--trainer.profiler", "simple"});
  ASSERT_EQ(r.profile, r.run_dir / "fit-profiler.txt");
  const auto report = read_text(r.profile);
  EXPECT_EQ(report.rfind("FIT Profiler Report\n", 0), 0u) << report;
  // 2 epochs x 4 batches; a validation and a salt checkpoint per epoch.
  EXPECT_EQ(profile_row(report, "run_training_batch").at(2), "8") << report;
  EXPECT_EQ(profile_row(report, "[LightningModule].optimizer_step").at(2), "8") << report;
  EXPECT_EQ(profile_row(report, "run_training_epoch").at(2), "2") << report;
  EXPECT_EQ(profile_row(report, "run_validation").at(2), "2") << report;
  EXPECT_EQ(profile_row(report, "[Callback]Checkpoint.on_train_epoch_end").at(2), "2") << report;
  EXPECT_EQ(profile_row(report, "Total").at(4), "100 %") << report;

  const auto dir = run.dir() / "prof";
  auto c = fit("prof2", {"--trainer.max_epochs", "1",
                         "--trainer.profiler={class_path: lightning.pytorch.profilers.SimpleProfiler, init_args: "
                         "{dirpath: " + dir.string() + ", filename: perf, extended: false}}"});
  EXPECT_EQ(c.profile, dir / "fit-perf.txt");
  const auto plain = read_text(c.profile);
  EXPECT_EQ(profile_row(plain, "run_training_batch").size(), 3u) << plain;  // action, mean, total
  EXPECT_EQ(plain.find("Num calls"), std::string::npos);

  try {
    fit("prof3", {"--trainer.profiler", "advanced"});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'trainer.profiler': 'advanced' is not available in salt-cpp"), std::string::npos)
        << e.what();
  }
}

TEST(DataTransforms, SaltsDocumentedGaussianNoiseTrains) {
  InProcessRun run;
  // salt's docs' form; mean 1: noise around each value.
  auto r = fit("noise", {"--trainer.max_epochs", "1",
                         "--data.transforms=[{class_path: salt.data.transforms.GaussianNoise, init_args: {noise_params: "
                         "[{input_type: jets, variable: pt_btagJes, mean: 1.0, std: 0.1}]}}]"});
  auto clean = fit("clean", {"--trainer.max_epochs", "1"});
  EXPECT_EQ(r.global_step, 4);
  EXPECT_FALSE(same_weights(r.checkpoints.back(), clean.checkpoints.back()));  // the inputs changed
}

}  // namespace
}  // namespace salt::testing

namespace salt::testing {
namespace {

// metrics.csv's rows as column -> cell (empty cells left out).
std::vector<std::map<std::string, std::string>> metrics_rows(const fs::path& csv) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  std::istringstream hs(line);
  for (std::string c; std::getline(hs, c, ',');) header.push_back(c);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    std::istringstream ls(line);
    std::string cell;
    for (std::size_t i = 0; std::getline(ls, cell, ','); ++i)
      if (!cell.empty() && i < header.size()) row[header[i]] = cell;
    rows.push_back(row);
  }
  return rows;
}

TEST(DeviceStatsMonitor, LogsTheCpusFiguresAtEachLoggingStep) {
  InProcessRun run;
  auto r = fit("stats", {"--trainer.max_epochs", "1", "--trainer.log_every_n_steps", "2",
                         "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.DeviceStatsMonitor}"});
  int logged = 0;
  for (const auto& row : metrics_rows(r.run_dir / "metrics.csv")) {
    if (!row.count("train/loss")) continue;
    ++logged;
    for (const char* stat : {"cpu_vm_percent", "cpu_percent", "cpu_swap_percent"}) {
      const auto key = std::string("DeviceStatsMonitor.on_train_batch_end/") + stat;
      ASSERT_TRUE(row.count(key)) << key;
      const double v = std::stod(row.at(key));
      EXPECT_GE(v, 0) << key;
      EXPECT_LE(v, 100) << key;
    }
    EXPECT_GT(std::stod(row.at("DeviceStatsMonitor.on_train_batch_end/cpu_vm_percent")), 0);
  }
  EXPECT_EQ(logged, 2);  // steps 2 and 4
  auto off = fit("nostats", {"--trainer.max_epochs", "1", "--trainer.log_every_n_steps", "2",
                             "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.DeviceStatsMonitor, "
                             "init_args: {cpu_stats: false}}"});
  for (const auto& row : metrics_rows(off.run_dir / "metrics.csv"))
    EXPECT_FALSE(row.count("DeviceStatsMonitor.on_train_batch_end/cpu_percent"));
}

TEST(GradientAccumulationScheduler, ChangesBatchesPerStepByEpochAndResumesIntoIt) {
  InProcessRun run;
  const std::string gas =
      "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.GradientAccumulationScheduler, "
      "init_args: {scheduling: {1: 2, 2: 4}}}";
  // 4 batches per epoch: epoch 0 one per step (4), epoch 1 two (2), epoch 2 four (1).
  auto r = fit("gas", {"--trainer.max_epochs", "3", gas});
  ASSERT_EQ(r.checkpoints.size(), 3u);
  EXPECT_EQ(training::load_checkpoint(r.checkpoints[0]).global_step, 4);
  EXPECT_EQ(training::load_checkpoint(r.checkpoints[1]).global_step, 6);
  EXPECT_EQ(r.global_step, 7);
  auto resumed = fit("gasb", {"--trainer.max_epochs", "3", "--ckpt_path", r.checkpoints[1].string(), gas});
  EXPECT_EQ(resumed.global_step, 7);
  EXPECT_TRUE(same_weights(r.checkpoints.back(), resumed.checkpoints.back()));
  EXPECT_THROW(fit("gasc", {"--trainer.max_epochs", "1", "--trainer.accumulate_grad_batches", "2", gas}), UsageError);
}

}  // namespace
}  // namespace salt::testing

namespace salt::testing {
namespace {

TEST(StochasticWeightAveraging, AveragesTheLastEpochsUnderSwalrAndResumesExactly) {
  InProcessRun run;
  // max_epochs 4, swa_epoch_start 2: averaging from epoch 1 (0-based) to 3, each at
  // the epoch's start, so of the weights after epochs 0, 1 and 2 (salt's checkpoints).
  const std::string swa = "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.StochasticWeightAveraging, "
                          "init_args: {swa_lrs: 1e-3, swa_epoch_start: 2, annealing_epochs: 2}}";
  auto r = fit("swa", {"--trainer.max_epochs", "4", "--trainer.log_every_n_steps", "1", swa});
  ASSERT_EQ(r.checkpoints.size(), 4u);
  const auto averaged = training::load_checkpoint(r.run_dir / "ckpts" / "swa.ckpt");
  std::vector<training::CheckpointState> epochs;
  for (int e = 0; e < 3; ++e) epochs.push_back(training::load_checkpoint(r.checkpoints[static_cast<std::size_t>(e)]));
  ASSERT_EQ(averaged.state_dict.size(), epochs[0].state_dict.size());
  for (std::size_t i = 0; i < averaged.state_dict.size(); ++i) {
    const auto mean = (epochs[0].state_dict[i].second + epochs[1].state_dict[i].second + epochs[2].state_dict[i].second) / 3;
    EXPECT_TRUE(torch::allclose(averaged.state_dict[i].second, mean, 1e-5, 1e-7)) << averaged.state_dict[i].first;
  }
  EXPECT_FALSE(torch::allclose(averaged.state_dict[0].second, training::load_checkpoint(r.checkpoints[3]).state_dict[0].second));
  // SWALR: epoch 1 keeps the lr the one-cycle schedule had reached (lr0), epoch 2 is
  // half way (cos at t = 1/2) to swa_lrs, epoch 3 at swa_lrs.
  std::vector<double> lr;
  for (const auto& row : metrics_rows(r.run_dir / "metrics.csv"))
    if (row.count("lr-AdamW")) lr.push_back(std::stod(row.at("lr-AdamW")));
  ASSERT_EQ(lr.size(), 16u);
  const double lr0 = lr[4];
  for (int s = 4; s < 8; ++s) EXPECT_DOUBLE_EQ(lr[static_cast<std::size_t>(s)], lr0);
  for (int s = 8; s < 12; ++s) EXPECT_NEAR(lr[static_cast<std::size_t>(s)], (1e-3 + lr0) / 2, 1e-10);  // metrics.csv: 8 digits
  for (int s = 12; s < 16; ++s) EXPECT_NEAR(lr[static_cast<std::size_t>(s)], 1e-3, 1e-10);
  EXPECT_NE(lr0, lr[3]);  // the one-cycle schedule moved until then
  // Resumed after epoch 1, the average and its schedule go on to the same result.
  auto resumed = fit("swab", {"--trainer.max_epochs", "4", "--ckpt_path", r.checkpoints[1].string(), swa});
  const auto again = training::load_checkpoint(resumed.run_dir / "ckpts" / "swa.ckpt");
  for (std::size_t i = 0; i < again.state_dict.size(); ++i)
    EXPECT_TRUE(torch::equal(again.state_dict[i].second, averaged.state_dict[i].second)) << again.state_dict[i].first;
  // A state as Lightning writes it (SWALR's state_dict has no salt_cpp_lr0/beta1), inside
  // the window after epoch 2: the start lr and momentum come from the one-cycle
  // schedule where the averaging began, and the average ends the same, bit for bit.
  auto lightning = training::load_checkpoint(r.checkpoints[2]);
  for (auto& [key, value] : lightning.callback_states) {
    if (key != "StochasticWeightAveraging") continue;
    const auto& scheduler = *value.find("scheduler_state");
    const auto before = scheduler.entries().size();
    scheduler.erase_item("salt_cpp_lr0");
    scheduler.erase_item("salt_cpp_beta1");
    ASSERT_EQ(scheduler.entries().size(), before - 2);
  }
  const auto lightning_ckpt = run.dir() / "lightning_swa.ckpt";
  training::save_checkpoint(lightning_ckpt, lightning, nullptr);
  auto from_lightning = fit("swac", {"--trainer.max_epochs", "4", "--ckpt_path", lightning_ckpt.string(), swa});
  const auto third = training::load_checkpoint(from_lightning.run_dir / "ckpts" / "swa.ckpt");
  ASSERT_EQ(third.state_dict.size(), averaged.state_dict.size());
  for (std::size_t i = 0; i < third.state_dict.size(); ++i)
    EXPECT_TRUE(torch::equal(third.state_dict[i].second, averaged.state_dict[i].second)) << third.state_dict[i].first;
  const auto last = training::load_checkpoint(r.checkpoints[3]);
  const auto& state = callback_state(last, "StochasticWeightAveraging");
  EXPECT_EQ(state.find("n_averaged")->as_int(), 3);
  EXPECT_EQ(state.find("latest_update_epoch")->as_int(), 3);
  // Lightning loads average_model_state strictly into a copy of the module: the keys of
  // the checkpoint's state_dict, in its order, buffers and salt's aliases included, the
  // parameters averaged (here, after epochs 0-2: swa.ckpt's weights).
  const auto& avg = *state.find("average_model_state");
  ASSERT_EQ(avg.entries().size(), last.state_dict.size());
  std::size_t i = 0;
  for (const auto& [name, value] : avg.entries()) {
    EXPECT_EQ(name.as_str(), last.state_dict[i].first);
    EXPECT_TRUE(torch::equal(value.as_tensor(), averaged.state_dict[i].second)) << name.as_str();
    ++i;
  }
  // SWALR's state_dict as torch writes it (anneal_func as the newer _anneal_strategy):
  // stepped at the end of epochs 1, 2 and 3, last_epoch counted from max_epochs for cos.
  const auto& sched = *state.find("scheduler_state");
  EXPECT_EQ(sched.find("_step_count")->as_int(), 1 + 3);
  EXPECT_EQ(sched.find("last_epoch")->as_int(), 4 + 3);
  EXPECT_EQ(sched.find("_anneal_strategy")->as_str(), "cos");
  EXPECT_EQ(sched.find("anneal_epochs")->as_int(), 2);
}

}  // namespace
}  // namespace salt::testing

namespace salt::testing {
namespace {

TEST(CallbackState, AnUnreadableSavedStateIsOneLineNamingTheFileAndCallback) {
  InProcessRun run;
  auto first = fit("bad_state", {"--trainer.max_epochs", "1", early_stopping(3)});
  auto state = training::load_checkpoint(first.checkpoints.back());
  for (auto& [key, value] : state.callback_states)
    if (key == kEsKey) value = serialize::PyValue::dict();  // no wait_count, best_score, ...
  const auto broken = run.dir() / "broken.ckpt";
  training::save_checkpoint(broken, state, nullptr);
  try {
    fit("bad_state2", {"--trainer.max_epochs", "2", "--ckpt_path", broken.string(), "--model.lrs_config.last_epoch", "0",
                       early_stopping(3)});
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(broken.string() + ": the state of callback " + kEsKey + " cannot be read"), std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace salt::testing
