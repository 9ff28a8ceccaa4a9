// SIGUSR1 (a batch system's pre-timeout warning) mid-epoch: the run saves a
// requeue checkpoint and stops; the same command then resumes in the same run
// directory and ends with exactly the weights of an uninterrupted run. Also
// Ctrl-C: a clean stop with exit code 130.
#include <signal.h>

#include <chrono>
#include <memory>
#include <thread>

#include "training/fit_support.h"
#include "training/checkpoints/checkpoint.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {
bool has_epoch0_checkpoint(const fs::path& run) {
  std::error_code ec;
  if (!fs::is_directory(run / "ckpts", ec)) return false;
  for (const auto& e : fs::directory_iterator(run / "ckpts", ec))
    if (e.path().filename().string().rfind("epoch=000-", 0) == 0) return true;
  return false;
}

// `salt fit ARGS` started in the background in the test's directory.
std::unique_ptr<BackgroundProcess> start_fit(const fs::path& cwd, const std::vector<std::string>& args,
                                             const std::vector<std::string>& env) {
  std::vector<std::string> argv{salt::testing::salt_binary(), "fit"};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<BackgroundProcess>(argv, cwd, env);
}
}  // namespace

// The job id salt hands to `scontrol requeue` (a shell command) comes from the
// environment: one that is not Slurm's (digits) is refused, and nothing in it runs.
TEST_F(FitTest, Sigusr1WithAForgedSlurmJobIdRunsNothingFromIt) {
  const auto run = dir / "logs" / "GN2_cpu_forged";
  auto fit = start_fit(dir.path(), small_gn2({"--trainer.max_epochs", "3", "-ls", "forged"}),
                       {"OMP_NUM_THREADS=1", "SLURM_JOB_ID=1;touch planted"});
  ASSERT_TRUE(wait_until([&] { return has_epoch0_checkpoint(run); }, std::chrono::seconds(60)));
  fit->signal(SIGUSR1);
  auto r = fit->wait();
  EXPECT_EQ(r.exit_code, 128 + SIGUSR1) << r.err;  // saved, not finished, not requeued
  EXPECT_NE(r.err.find("SIGUSR1: saved"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SLURM_JOB_ID is not a Slurm job id (digits only): not requeued"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "planted"));
  EXPECT_TRUE(fs::exists(run / "ckpts" / "requeue.ckpt"));
}

TEST_F(FitTest, Sigusr1SavesRequeueCheckpointAndTheRerunResumesExactly) {
  auto straight = salt("fit", small_gn2({"--trainer.max_epochs", "4", "-ls", "straight"}));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;

  auto args = small_gn2({"--trainer.max_epochs", "4", "-ls", "requeued", "-oc"});
  const auto run = dir / "logs" / "GN2_cpu_requeued";
  {
    auto first = start_fit(dir.path(), args, {"OMP_NUM_THREADS=1"});
    // Signal during epoch 1: once epoch 0's checkpoint exists.
    ASSERT_TRUE(wait_until([&] { return has_epoch0_checkpoint(run); }, std::chrono::seconds(60)));
    first->signal(SIGUSR1);
    auto r = first->wait();
    // Outside Slurm nobody restarts it: stopped (as by any stop signal), not "finished".
    ASSERT_EQ(r.exit_code, 128 + SIGUSR1) << r.err;
    EXPECT_NE(r.err.find("SIGUSR1: saved"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not requeued; rerun the same command to resume"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("salt: stopped by signal " + std::to_string(SIGUSR1)), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("finished:"), std::string::npos) << r.err;
  }
  ASSERT_TRUE(fs::exists(run / "ckpts" / "requeue.ckpt"));
  auto saved = training::load_checkpoint(run / "ckpts" / "requeue.ckpt");
  EXPECT_GE(saved.batch_in_epoch, 1);
  EXPECT_LT(saved.global_step, 32);

  auto second = salt("fit", args);  // the same command: resumes in the same directory
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("resuming from " + (run / "ckpts" / "requeue.ckpt").string()), std::string::npos)
      << second.err;
  EXPECT_FALSE(fs::exists(run / "ckpts" / "requeue.ckpt"));  // removed once finished

  auto a = checkpoints(dir / "logs" / "GN2_cpu_straight");
  auto b = checkpoints(run);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(a[i].filename(), b[i].filename());
  auto wa = training::load_checkpoint(a[3]), wb = training::load_checkpoint(b[3]);
  EXPECT_EQ(wa.global_step, wb.global_step);
  for (std::size_t i = 0; i < wa.state_dict.size(); ++i)
    EXPECT_TRUE(torch::equal(wa.state_dict[i].second, wb.state_dict[i].second)) << wa.state_dict[i].first;
  // metrics.csv kept the rows from before the requeue: one val row per epoch
  auto csv = read_file(run / "metrics.csv");
  int val_rows = 0;
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  auto header = line;
  while (std::getline(lines, line)) {
    // val rows have a value in the val/loss column
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) cells.push_back(c);
    std::vector<std::string> names;
    std::stringstream hs(header);
    while (std::getline(hs, c, ',')) names.push_back(c);
    auto col = std::find(names.begin(), names.end(), "val/loss") - names.begin();
    if (col < static_cast<long>(cells.size()) && !cells[col].empty()) ++val_rows;
  }
  EXPECT_EQ(val_rows, 4) << csv;
}

TEST_F(FitTest, CtrlCStopsCleanly) {
  auto args = small_gn2({"--trainer.max_epochs", "50", "-ls", "interrupted", "--data.move_files_temp", "scratch/copies"});
  std::vector<std::string> argv{salt::testing::salt_binary(), "fit"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto run = dir / "logs" / "GN2_cpu_interrupted";
  BackgroundProcess p(argv, dir.path(), {"OMP_NUM_THREADS=1"});
  ASSERT_TRUE(wait_until([&] { return has_epoch0_checkpoint(run); }, std::chrono::seconds(60)));
  EXPECT_TRUE(fs::exists(dir / "scratch" / "copies"));  // the temp copies are in use
  p.signal(SIGINT);
  auto r = p.wait();
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("stopped by signal 2"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "scratch" / "copies"));  // copies and their directory removed
  EXPECT_TRUE(has_epoch0_checkpoint(run));                // completed checkpoints kept
  for (const auto& e : fs::recursive_directory_iterator(run))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

}  // namespace salt::testing
