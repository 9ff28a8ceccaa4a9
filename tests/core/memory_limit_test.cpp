// A cgroup's memory limit and what it has free, as salt reads them to keep a CPU
// command within the limit (core/memory_limit.h), from v1's and v2's files.
#include "core/memory_limit.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/test_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

void write_cgroup_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  write_file(file, text);
}

}  // namespace

TEST(MemoryLimit, CgroupV2LimitIsTheSmallestUpTheTreeAndFreeTheLeastLeft) {
  TempDir root;
  write_cgroup_file(root / "memory.max", "max\n");
  write_cgroup_file(root / "job" / "memory.max", "1073741824\n");  // the job: 1 GiB
  write_cgroup_file(root / "job" / "memory.current", "805306368\n");  // 768 MiB in use by its steps
  write_cgroup_file(root / "job" / "step" / "memory.max", "max\n");
  write_cgroup_file(root / "job" / "step" / "memory.current", "104857600\n");
  auto m = cgroup_memory(root.path(), "0::/job/step\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->limit_bytes, 1073741824.0);
  EXPECT_EQ(m->free_bytes, 268435456.0);  // what the job has left, not the step's 1 GiB - 100 MiB
  write_cgroup_file(root / "job" / "step" / "memory.max", "209715200\n");  // the step's own 200 MiB binds
  m = cgroup_memory(root.path(), "0::/job/step\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->limit_bytes, 209715200.0);
  EXPECT_EQ(m->free_bytes, 104857600.0);
  EXPECT_FALSE(cgroup_memory(root.path(), "0::/\n"));  // the root: no limit
  write_cgroup_file(root / "full" / "memory.max", "1000\n");
  write_cgroup_file(root / "full" / "memory.current", "5000\n");  // over its limit: nothing free, not negative
  EXPECT_EQ(cgroup_memory(root.path(), "0::/full\n")->free_bytes, 0.0);
}

TEST(MemoryLimit, CgroupV1ReadsTheMemoryControllerAndItsNoLimitValue) {
  TempDir root;
  const std::string unlimited = "9223372036854771712\n";  // v1's "no limit", page-rounded 2^63 - 1
  write_cgroup_file(root / "memory" / "memory.limit_in_bytes", unlimited);
  write_cgroup_file(root / "memory" / "slurm" / "memory.limit_in_bytes", unlimited);
  write_cgroup_file(root / "memory" / "slurm" / "memory.usage_in_bytes", "1000\n");
  const std::string self = "5:cpu,cpuacct:/slurm\n4:memory:/slurm\n0::/\n";
  EXPECT_FALSE(cgroup_memory(root.path(), self));
  write_cgroup_file(root / "memory" / "slurm" / "memory.limit_in_bytes", "419430400\n");
  write_cgroup_file(root / "memory" / "slurm" / "memory.usage_in_bytes", "104857600\n");
  const auto m = cgroup_memory(root.path(), self);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->limit_bytes, 419430400.0);
  EXPECT_EQ(m->free_bytes, 314572800.0);
  // A limit on another controller's hierarchy is not a memory limit.
  write_cgroup_file(root / "cpu,cpuacct" / "slurm" / "memory.limit_in_bytes", "1000\n");
  EXPECT_EQ(cgroup_memory(root.path(), self)->limit_bytes, 419430400.0);
}

// Files in tmpfs stay in memory (the cgroup counts them); on a disk they do not. A
// folder not made yet is judged by the first parent that exists.
TEST(MemoryLimit, TmpfsFoldersAreKeptInMemoryDiskFoldersAreNot) {
  SALT_REQUIRE(fs::exists("/dev/shm"), "no /dev/shm");
  TempDir disk;
  const bool shm_tmpfs = run_process({"/usr/bin/stat", "-f", "-c", "%T", "/dev/shm"}).out == "tmpfs\n";
  const bool disk_tmpfs = run_process({"/usr/bin/stat", "-f", "-c", "%T", disk.path().string()}).out == "tmpfs\n";
  EXPECT_EQ(kept_in_memory("/dev/shm"), shm_tmpfs);
  EXPECT_EQ(kept_in_memory("/dev/shm/not/made/yet"), shm_tmpfs);
  EXPECT_EQ(kept_in_memory(disk.path() / "not" / "made"), disk_tmpfs);
  EXPECT_FALSE(kept_in_memory("/proc/self"));  // procfs
}

}  // namespace salt::testing
