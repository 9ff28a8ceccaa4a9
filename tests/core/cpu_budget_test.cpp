// The compute-thread rule for CPU runs (core/cpu_budget.h): the affinity mask,
// the cgroup quota read from real cgroup files (v1 and v2 layouts, written here
// as the kernel lays them out), and the node's ranks.
#include <gtest/gtest.h>
#include <sched.h>

#include "core/cpu_budget.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

CpuInputs inputs(int mask, int machine, std::optional<double> quota, int ranks) {
  CpuInputs in;
  in.affinity_cores = mask;
  in.machine_cores = machine;
  in.quota_cores = quota;
  in.local_ranks = ranks;
  return in;
}

TEST(CpuBudget, ThreadsAreTheUsableCoresSharedAmongTheNodesRanks) {
  EXPECT_EQ(choose_threads(inputs(8, 8, std::nullopt, 1)).threads, 8);
  EXPECT_EQ(choose_threads(inputs(8, 8, std::nullopt, 1)).why, "8 cores in the affinity mask");
  EXPECT_EQ(choose_threads(inputs(64, 64, std::nullopt, 4)).threads, 16);
  EXPECT_EQ(choose_threads(inputs(64, 64, std::nullopt, 4)).why,
            "64 cores in the affinity mask shared by 4 ranks on this node");
  EXPECT_EQ(choose_threads(inputs(8, 8, std::nullopt, 16)).threads, 1);  // more ranks than cores: one each
  EXPECT_EQ(choose_threads(inputs(1, 1, std::nullopt, 1)).why, "1 core in the affinity mask");
}

// srun --cpus-per-task 8 binds each of 4 ranks to 8 of the node's 32 cores: the
// mask is already the rank's share.
TEST(CpuBudget, AMaskNarrowerThanTheMachineIsTheRanksOwn) {
  EXPECT_EQ(choose_threads(inputs(8, 32, std::nullopt, 4)).threads, 8);
  EXPECT_EQ(choose_threads(inputs(8, 32, std::nullopt, 4)).why, "8 cores in the affinity mask (this rank's own)");
  EXPECT_EQ(choose_threads(inputs(1, 2, std::nullopt, 1)).threads, 1);  // taskset -c 0
}

// docker --cpus, a Kubernetes limit, a Slurm cgroup: the quota caps the threads,
// shared by the node's ranks (they live in one cgroup).
TEST(CpuBudget, ACgroupQuotaCapsTheThreads) {
  EXPECT_EQ(choose_threads(inputs(8, 8, 2.5, 1)).threads, 2);
  EXPECT_EQ(choose_threads(inputs(8, 8, 2.5, 1)).why, "a cgroup CPU quota of 2.5 cores");
  EXPECT_EQ(choose_threads(inputs(8, 8, 0.5, 1)).threads, 1);   // under one core: still one
  EXPECT_EQ(choose_threads(inputs(2, 2, 16.0, 1)).threads, 2);  // a quota above the mask adds no core
  EXPECT_EQ(choose_threads(inputs(64, 64, 16.0, 4)).threads, 4);
  EXPECT_EQ(choose_threads(inputs(64, 64, 16.0, 4)).why, "a cgroup CPU quota of 16 cores shared by 4 ranks");
}

TEST(CpuBudget, OneThreadOnAGpu) {
  auto in = inputs(64, 64, std::nullopt, 1);
  in.on_gpu = true;
  const auto gpu = choose_threads(in);
  EXPECT_EQ(gpu.threads, 1);
  EXPECT_NE(gpu.why.find("GPU"), std::string::npos);
}

TEST(CpuBudget, AffinityCoresAreThoseOfTheMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(affinity_cores(), CPU_COUNT(&set));
  // One CPU of the mask, in a child process: the count follows.
  auto one = run_process({"taskset", "-c", "0", "nproc"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "1\n");
}

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  write_file(file, text);
}

TEST(CpuBudget, QuotaFromCgroupV2IsTheSmallestOnThePathToTheRoot) {
  TempDir root;
  write(root / "cpu.max", "max 100000\n");
  write(root / "job" / "cpu.max", "300000 100000\n");      // 3 cores for the job
  write(root / "job" / "step" / "cpu.max", "max 100000\n");  // its step: no limit of its own
  EXPECT_EQ(cgroup_quota_cores(root.path(), "0::/job/step\n"), 3.0);
  write(root / "job" / "step" / "cpu.max", "150000 100000\n");
  EXPECT_EQ(cgroup_quota_cores(root.path(), "0::/job/step\n"), 1.5);
  EXPECT_EQ(cgroup_quota_cores(root.path(), "0::/\n"), std::nullopt);  // the root: unlimited
  write(root / "odd" / "cpu.max", "lots of\n");
  EXPECT_EQ(cgroup_quota_cores(root.path(), "0::/odd\n"), std::nullopt);  // unreadable: no limit assumed
}

TEST(CpuBudget, QuotaFromCgroupV1ComesFromTheCpuController) {
  TempDir root;
  write(root / "cpu,cpuacct" / "cpu.cfs_quota_us", "-1\n");
  write(root / "cpu,cpuacct" / "cpu.cfs_period_us", "100000\n");
  const std::string self = "4:memory:/x\n3:cpu,cpuacct:/\n0::/\n";
  EXPECT_EQ(cgroup_quota_cores(root.path(), self), std::nullopt);
  write(root / "cpu,cpuacct" / "slurm" / "cpu.cfs_quota_us", "200000\n");
  write(root / "cpu,cpuacct" / "slurm" / "cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(cgroup_quota_cores(root.path(), "3:cpu,cpuacct:/slurm\n"), 2.0);
}

}  // namespace
}  // namespace salt::testing
