// Every rank stops at the same step: a non-finite loss anywhere, or Ctrl-C to the
// launcher (forwarded to the workers, agreed on at the next step boundary).
#include <signal.h>

#include "parallel/dist_support.h"

namespace salt::testing {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {
std::vector<std::string> two_ranks(std::vector<std::string> extra) {
  std::vector<std::string> args{"-c", (source_dir() / "configs" / "GN2.yaml").string(), "-c",
                                (source_dir() / "configs" / "GN2_cpu.yaml").string(), "--data.batch_size", "250",
                                "--data.num_workers", "1", "--trainer.enable_progress_bar", "false",
                                "--trainer.devices", "2", "--trainer.accelerator", "cpu"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}
}  // namespace

TEST_F(FitTest, ANonFiniteLossOnAnyRankStopsAllRanksWithTheMessage) {
  // An absurd learning rate: the loss overflows within a step or two.
  auto r = salt("fit", two_ranks({"--trainer.max_epochs", "5", "--model.lrs_config.initial", "1e9", "--model.lrs_config.max",
                                  "1e10", "--model.lrs_config.end", "1e9"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::regex line("\\[rank ([01])\\] salt: error: (train/loss on rank [01] is not finite at epoch 0, step [0-9]+)");
  std::map<std::string, std::string> per_rank;
  for (std::sregex_iterator it(r.err.begin(), r.err.end(), line), end; it != end; ++it) per_rank[(*it)[1]] = (*it)[2];
  ASSERT_EQ(per_rank.size(), 2u) << r.err;
  EXPECT_EQ(per_rank["0"], per_rank["1"]);  // same step, same message on both ranks
  EXPECT_NE(r.err.find("\nsalt: error: rank "), std::string::npos) << r.err;
}

TEST_F(FitTest, CtrlCToTheLauncherStopsEveryRankCleanly) {
  auto args = two_ranks({"--trainer.max_epochs", "200", "-ls", "interrupted"});
  std::vector<std::string> argv{salt::testing::salt_binary(), "fit"};
  argv.insert(argv.end(), args.begin(), args.end());
  BackgroundProcess launcher(argv, dir.path(), {"OMP_NUM_THREADS=1"});
  const auto run = dir / "logs" / "GN2_cpu_interrupted";
  ASSERT_TRUE(wait_until([&] { return fs::exists(run / "ckpts") && !checkpoints(run).empty(); }, 60s));
  launcher.signal(SIGINT);
  ASSERT_TRUE(wait_until([&] { return !process_alive(launcher.pid()); }, 30s)) << "the launcher hangs";
  auto r = launcher.wait();
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("[rank 0] salt: stopped by signal 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[rank 1] salt: stopped by signal 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nsalt: stopped by signal 2"), std::string::npos) << r.err;
  for (const auto& e : fs::recursive_directory_iterator(run))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

// Before: 2-rank runs with move_files_temp left an empty directory (4 of 5 runs):
// the rank that made it finished while the other's copies were still in it.
TEST_F(FitTest, MoveFilesTempDirectoriesGoWhenTwoRanksFinishOrAreStopped) {
  for (const bool stopped : {false, true}) {
    const auto top = dir / (stopped ? "shm_stopped" : "shm_finished");
    auto args = two_ranks({"--trainer.max_epochs", stopped ? "200" : "1", "-ls", stopped ? "stopped" : "finished",
                           "--data.move_files_temp", (top / "user" / "salt").string()});
    std::vector<std::string> argv{salt::testing::salt_binary(), "fit"};
    argv.insert(argv.end(), args.begin(), args.end());
    BackgroundProcess launcher(argv, dir.path(), {"OMP_NUM_THREADS=1"});
    if (stopped) {
      const auto run = dir / "logs" / "GN2_cpu_stopped";
      ASSERT_TRUE(wait_until([&] { return fs::exists(run / "ckpts") && !checkpoints(run).empty(); }, 60s));
      EXPECT_TRUE(fs::exists(top / "user" / "salt"));  // both ranks' copies in use
      launcher.signal(SIGINT);
    }
    auto r = launcher.wait();
    EXPECT_EQ(r.exit_code, stopped ? 130 : 0) << r.err;
    EXPECT_FALSE(fs::exists(top)) << (stopped ? "stopped" : "finished") << ": left " << top;
  }
}

}  // namespace salt::testing
