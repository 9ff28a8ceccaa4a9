// Lightning's checkpoints on exception: OnExceptionCheckpoint and
// ModelCheckpoint(save_on_exception). A run stopped by SIGTERM mid-training leaves
// the state of its last optimizer step, which resumes to the uninterrupted run's
// weights; weights a non-finite loss spoilt are not saved.
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "training/checkpoints/checkpoint.h"
#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

void expect_same_weights(const fs::path& a, const fs::path& b) {
  const auto wa = training::load_checkpoint(a), wb = training::load_checkpoint(b);
  EXPECT_EQ(wa.global_step, wb.global_step) << a << " " << b;
  ASSERT_EQ(wa.state_dict.size(), wb.state_dict.size());
  for (std::size_t i = 0; i < wa.state_dict.size(); ++i)
    EXPECT_TRUE(torch::equal(wa.state_dict[i].second, wb.state_dict[i].second)) << wa.state_dict[i].first;
}

// A copy of `from` whose tracks in rows [start, stop) have a NaN d0: the batch made
// of them stops a run with "Non-finite inputs".
ProcessResult write_nan_rows_copy(const fs::path& from, const fs::path& to, int64_t start, int64_t stop) {
  return run_python(R"(
import sys, shutil, h5py, numpy as np
shutil.copy(sys.argv[1], sys.argv[2])
start, stop = int(sys.argv[3]), int(sys.argv[4])
with h5py.File(sys.argv[2], "r+") as f:
    t = f["tracks"][start:stop]
    t["d0"][t["valid"]] = np.nan
    f["tracks"][start:stop] = t
)",
                    {from.string(), to.string(), std::to_string(start), std::to_string(stop)});
}

}  // namespace

class OnExceptionFit : public FitTest {
 protected:
  // salt's Checkpoint, a ModelCheckpoint that saves on exception only (every second
  // epoch otherwise), and OnExceptionCheckpoint into crash/.
  std::vector<std::string> crash_args(const std::string& suffix, const std::string& epochs) {
    write_file(dir / "crash.yaml", "trainer:\n  callbacks:\n"
                                   "    - class_path: salt.callbacks.Checkpoint\n"
                                   "      init_args: {monitor_loss: val/jets_classification_loss}\n"
                                   "    - class_path: lightning.pytorch.callbacks.ModelCheckpoint\n"
                                   "      init_args: {every_n_epochs: 2, save_on_exception: true}\n"
                                   "    - class_path: lightning.pytorch.callbacks.OnExceptionCheckpoint\n"
                                   "      init_args: {dirpath: " + (dir / "crash").string() + "}\n");
    return small_gn2({"-c", (dir / "crash.yaml").string(), "--trainer.max_epochs", epochs, "-ls", suffix});
  }
};

TEST_F(OnExceptionFit, SigtermSavesTheLastStepWhichResumesToTheUninterruptedRun) {
  // The uninterrupted run, with every step's weights.
  write_file(dir / "every.yaml", "trainer:\n  callbacks:\n"
                                 "    - class_path: salt.callbacks.Checkpoint\n"
                                 "      init_args: {monitor_loss: val/jets_classification_loss}\n"
                                 "    - class_path: lightning.pytorch.callbacks.ModelCheckpoint\n"
                                 "      init_args: {every_n_train_steps: 1, save_top_k: -1, filename: 'every-{step}'}\n");
  auto straight = salt("fit", small_gn2({"-c", (dir / "every.yaml").string(), "--trainer.max_epochs", "4", "-ls",
                                         "straight"}));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  const auto straight_run = dir / "logs" / "GN2_cpu_straight";

  const auto run = dir / "logs" / "GN2_cpu_crashed";
  std::vector<std::string> argv{salt_binary(), "fit"};
  for (const auto& a : crash_args("crashed", "4")) argv.push_back(a);
  BackgroundProcess fit(argv, dir.path(), {"OMP_NUM_THREADS=1"});
  ASSERT_TRUE(wait_until([&] { return fs::exists(run / "ckpts") && !checkpoints(run).empty(); }, std::chrono::seconds(60)));
  fit.signal(SIGTERM);
  auto r = fit.wait();
  ASSERT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_NE(r.err.find("salt: stopped by signal 15"), std::string::npos) << r.err;  // its one line
  EXPECT_EQ(error_lines(r.err), 0) << r.err;
  const auto crash = dir / "crash" / "on_exception.ckpt";
  ASSERT_TRUE(fs::exists(crash)) << r.err;
  EXPECT_NE(r.err.find("OnExceptionCheckpoint: saved " + crash.string()), std::string::npos) << r.err;
  const auto saved = training::load_checkpoint(crash);
  ASSERT_GE(saved.global_step, 8);  // after epoch 0's 8 steps
  ASSERT_LT(saved.global_step, 32);
  EXPECT_GE(saved.batch_in_epoch, 0);  // inside an epoch: its batches (or, in its validation, all 8)
  // The last step's weights, bit for bit; ModelCheckpoint saved the same under its template.
  expect_same_weights(crash, straight_run / "checkpoints" / ("every-step=" + std::to_string(saved.global_step) + ".ckpt"));
  const auto named = run / "checkpoints" /
                     ("epoch=" + std::to_string(saved.epoch) + "-step=" + std::to_string(saved.global_step) + ".ckpt");
  ASSERT_TRUE(fs::exists(named)) << r.err;
  EXPECT_NE(r.err.find("ModelCheckpoint: saved " + named.string()), std::string::npos) << r.err;
  expect_same_weights(named, crash);
  for (const auto& e : fs::recursive_directory_iterator(dir / "crash"))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();

  // Resumed, it ends where the uninterrupted run ended; finished, the file goes (Lightning's teardown).
  auto args = crash_args("resumed", "4");
  args.insert(args.end(), {"--ckpt_path", crash.string()});
  auto resumed = salt("fit", args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming from " + crash.string()), std::string::npos) << resumed.err;
  expect_same_weights(checkpoints(dir / "logs" / "GN2_cpu_resumed").back(), checkpoints(straight_run).back());
  EXPECT_FALSE(fs::exists(crash));

}

// An error before an epoch's first batch (its order drawn) or inside the epoch's
// validation (its loader's base seed drawn) saves the generator that the resume
// needs to go on as the uninterrupted run: the recorded order is taken, not drawn
// again, and the validation the resume runs again draws what the first one drew.
// Each run's batches and validation passes make new loader iterators here.
TEST_F(OnExceptionFit, AnErrorAtAnEpochsStartOrInItsValidationResumesToTheUninterruptedRun) {
  SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed (scripts/bootstrap.sh installs it)");
  write_file(dir / "every.yaml", "trainer:\n  callbacks:\n"
                                 "    - class_path: salt.callbacks.Checkpoint\n"
                                 "      init_args: {monitor_loss: val/jets_classification_loss}\n"
                                 "    - class_path: lightning.pytorch.callbacks.ModelCheckpoint\n"
                                 "      init_args: {every_n_train_steps: 1, save_top_k: -1, filename: 'every-{step}'}\n");
  const std::vector<std::string> shape{"--trainer.limit_train_batches", "4", "--data.persistent_workers", "false"};
  auto with_shape = [&](std::vector<std::string> args) {
    args.insert(args.end(), shape.begin(), shape.end());
    return args;
  };
  auto straight = salt("fit", small_gn2(with_shape({"-c", (dir / "every.yaml").string(), "--trainer.max_epochs", "2",
                                                    "-ls", "straight"})));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  const auto straight_run = dir / "logs" / "GN2_cpu_straight";
  const auto order = [&](int step) {
    return training::load_checkpoint(straight_run / "checkpoints" / ("every-step=" + std::to_string(step) + ".ckpt"))
        .epoch_order;
  };
  // Epoch 1 starts with a batch epoch 0 did not train on: spoilt, it stops the run there.
  const auto order0 = order(1), order1 = order(5);
  const int64_t first = order1[0].item<int64_t>();
  ASSERT_FALSE(order0.slice(0, 0, 4).eq(first).any().item<bool>()) << order0 << order1;
  const int64_t batch = 250;
  ASSERT_EQ(write_nan_rows_copy(dir / "data/toy/pp_output_train.h5", dir / "data/toy/late_nan_train.h5",
                                first * batch, (first + 1) * batch).exit_code, 0);
  ASSERT_EQ(write_nan_rows_copy(dir / "data/toy/pp_output_val.h5", dir / "data/toy/nan_val.h5", 0, batch).exit_code, 0);

  const auto crash = dir / "crash" / "on_exception.ckpt";
  const auto stop_and_resume = [&](const std::string& name, const std::string& option, const std::string& file,
                                   int64_t step, int64_t epoch, int64_t batches) {
    SCOPED_TRACE(name);
    auto args = with_shape(crash_args(name, "2"));
    args.insert(args.end(), {option, file});
    auto r = salt("fit", args);
    ASSERT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("Non-finite inputs for 'tracks'"), std::string::npos) << r.err;
    ASSERT_TRUE(fs::exists(crash)) << r.err;
    const auto saved = training::load_checkpoint(crash);
    EXPECT_EQ(saved.global_step, step);
    EXPECT_EQ(saved.epoch, epoch);
    EXPECT_EQ(saved.batch_in_epoch, batches);
    args = with_shape(crash_args(name + "_resumed", "2"));
    args.insert(args.end(), {"--ckpt_path", crash.string()});
    auto resumed = salt("fit", args);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    expect_same_weights(checkpoints(dir / "logs" / ("GN2_cpu_" + name + "_resumed")).back(),
                        checkpoints(straight_run).back());
  };
  stop_and_resume("epoch_start", "--data.train_file", "data/toy/late_nan_train.h5", 4, 1, 0);
  stop_and_resume("validation", "--data.val_file", "data/toy/nan_val.h5", 4, 0, 4);
}

// A loss gone NaN has already spoilt the weights: no checkpoint is written, the
// error stays one line, and the run's earlier checkpoints are untouched.
TEST_F(OnExceptionFit, WeightsANonFiniteLossSpoiltAreNotSaved) {
  SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed (scripts/bootstrap.sh installs it)");
  auto py = write_nan_tracks_copy(dir / "data/toy/pp_output_train.h5", dir / "data/toy/nan_train.h5");
  ASSERT_EQ(py.exit_code, 0) << py.err;
  auto args = crash_args("nan", "2");
  args.insert(args.end(), {"--data.train_file", "data/toy/nan_train.h5", "--data.ignore_finite_checks", "true"});
  auto r = salt("fit", args);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("train/loss is not finite at epoch"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no checkpoint on exception: the weights are no longer finite"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "crash" / "on_exception.ckpt"));
  EXPECT_FALSE(fs::exists(dir / "logs" / "GN2_cpu_nan" / "checkpoints"));
}

// Lightning's own refusal; a run that finishes leaves no on_exception.ckpt.
TEST_F(OnExceptionFit, AnEmptyFilenameIsRefusedAndAFinishedRunLeavesNoFile) {
  write_file(dir / "empty.yaml", "trainer:\n  callbacks:\n"
                                 "    - class_path: lightning.pytorch.callbacks.OnExceptionCheckpoint\n"
                                 "      init_args: {dirpath: crash, filename: ''}\n");
  auto r = salt("fit", small_gn2({"-c", (dir / "empty.yaml").string()}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("OnExceptionCheckpoint: the filename cannot be empty"), std::string::npos) << r.err;
  r = salt("fit", crash_args("dev", "2"));  // a finished run: nothing left in crash/
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir / "crash" / "on_exception.ckpt"));
}

}  // namespace salt::testing
