// LibTorch's intra-op threads for a run: OMP_NUM_THREADS when set, else the rule
// of core/cpu_budget.h for this machine (tests/gpu checks one thread for a run on
// a card; tests/core/cpu_budget_test.cpp the rule itself).
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>

#include "core/errors.h"
#include "training/fit_support.h"
#include "training/step/threads.h"

namespace {

struct RestoreThreads {
  int before = torch::get_num_threads();
  ~RestoreThreads() {
    unsetenv("OMP_NUM_THREADS");
    torch::set_num_threads(before);
  }
};

}  // namespace

TEST(Threads, OmpNumThreadsDecides) {
  RestoreThreads restore;
  salt::config::TrainerConfig cpu;
  cpu.accelerator = "cpu";
  using salt::training::read_step_options;
  setenv("OMP_NUM_THREADS", "1", 1);
  EXPECT_EQ(salt::training::configure_torch_threads(cpu, read_step_options().threads).threads, 1);
  setenv("OMP_NUM_THREADS", "2", 1);
  EXPECT_EQ(salt::training::configure_torch_threads(cpu, read_step_options().threads).threads, 2);
  EXPECT_EQ(salt::training::configure_torch_threads(cpu, read_step_options().threads).why, "OMP_NUM_THREADS");
}

// Without OMP_NUM_THREADS the CPU computes on every core of this process's mask
// (this test runs with no launcher: one rank), whatever LibTorch started with.
TEST(Threads, TheCpuTakesEveryUsableCore) {
  RestoreThreads restore;
  unsetenv("OMP_NUM_THREADS");
  torch::set_num_threads(1);
  salt::config::TrainerConfig cpu;
  cpu.accelerator = "cpu";
  const auto expected = salt::choose_threads(salt::this_machine());
  const auto chosen = salt::training::configure_torch_threads(cpu, salt::training::read_step_options().threads);
  EXPECT_EQ(chosen.threads, expected.threads);
  EXPECT_EQ(chosen.why, expected.why);
  EXPECT_EQ(torch::get_num_threads(), expected.threads);
  if (!salt::this_machine().quota_cores) EXPECT_EQ(chosen.threads, salt::affinity_cores());
}

TEST(Threads, OmpNumThreadsIsAWholeNumberUpToFourPerCore) {
  using salt::training::threads_from_env;
  EXPECT_EQ(threads_from_env(nullptr, 2), std::nullopt);
  EXPECT_EQ(threads_from_env("", 2), std::nullopt);
  EXPECT_EQ(threads_from_env("1", 2), 1);
  EXPECT_EQ(threads_from_env("8", 2), 8);
  EXPECT_EQ(threads_from_env("64", 16), 64);
  for (const char* bad : {"0", "9", "-1", "+2", " 2", "2.0", "two", "100000", "99999999999999999999"})
    EXPECT_THROW(threads_from_env(bad, 2), salt::UsageError) << bad;
  try {
    threads_from_env("100000", 2);
  } catch (const salt::UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "OMP_NUM_THREADS=100000: expected a whole number from 1 to 8 (4 threads for each "
                                     "of the 2 cores this process may use)");
  }
  EXPECT_GE(salt::affinity_cores(), 1);
}

// The real `salt fit`, without OMP_NUM_THREADS: every core of its mask on this
// 2-core machine, one under `taskset -c 0`; the log line and metadata.yaml say
// how many and why.
namespace salt::testing {

TEST_F(FitTest, ComputeThreadsFollowTheAffinityMaskAndAreRecorded) {
  auto fit = [&](const std::string& suffix, std::vector<std::string> prefix) {
    std::vector<std::string> argv{"env", "-u", "OMP_NUM_THREADS"};
    argv.insert(argv.end(), prefix.begin(), prefix.end());
    argv.push_back(salt_binary());
    argv.push_back("fit");
    for (const auto& a : small_gn2({"--trainer.max_epochs", "1", "--trainer.limit_train_batches", "2",
                                    "--trainer.limit_val_batches", "1", "-ls", suffix}))
      argv.push_back(a);
    return run_process(argv, dir.path());
  };
  const int cores = salt::affinity_cores();
  auto all = fit("all", {});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const auto why_all = salt::choose_threads(salt::this_machine()).why;
  EXPECT_NE(all.err.find("computing with " + std::to_string(salt::choose_threads(salt::this_machine()).threads) +
                         " CPU thread(s): " + why_all),
            std::string::npos)
      << all.err;
  auto meta = YAML::LoadFile((dir / "logs" / "GN2_cpu_all" / "metadata.yaml").string());
  EXPECT_EQ(meta["compute_threads_why"].as<std::string>(), why_all);
  if (!salt::this_machine().quota_cores) EXPECT_EQ(meta["compute_threads"].as<int>(), cores);

  if (cores < 2) {
    if (skips_allowed()) GTEST_SKIP() << "one core: taskset cannot narrow the mask";
    FAIL() << "one core in the mask: taskset cannot narrow it (SALT_ALLOW_SKIPS=1 skips this part)";
  }
  auto one = fit("one", {"taskset", "-c", "0"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.err.find("computing with 1 CPU thread(s): 1 core in the affinity mask (this rank's own)"),
            std::string::npos)
      << one.err;
  meta = YAML::LoadFile((dir / "logs" / "GN2_cpu_one" / "metadata.yaml").string());
  EXPECT_EQ(meta["compute_threads"].as<int>(), 1);
}

}  // namespace salt::testing
