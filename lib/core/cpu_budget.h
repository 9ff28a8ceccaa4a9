// How many compute threads a run on the CPU should use, from what the machine
// lets this process use: the cores of its affinity mask (taskset, Slurm's
// --cpus-per-task, numactl) and its cgroup's CPU quota (docker --cpus, Kubernetes
// limits), shared between the ranks on the node. torch's Python default takes the
// machine's cores; LibTorch 1.13's is one thread on some machines, which left half
// of a 2-core machine idle in bf16 (issue: every core by default).
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace salt {

// What the rule reads; each part from the system by default, given in tests.
struct CpuInputs {
  int affinity_cores = 1;             // CPUs in this process's affinity mask
  int machine_cores = 1;              // CPUs online on the machine
  std::optional<double> quota_cores;  // cgroup quota / period; none when unlimited
  int local_ranks = 1;                // processes of this run on this node
  bool on_gpu = false;
};

struct ThreadChoice {
  int threads = 1;
  std::string why;  // for the log line and metadata.yaml: "2 cores in the affinity mask, 1 rank on this node"
};

// The compute threads for a run without OMP_NUM_THREADS, at least 1:
// - on a GPU one (the card computes; what the host computes is small tensors);
// - else the cores of the affinity mask, divided among the node's ranks unless the
//   mask is narrower than the machine (a launcher such as srun bound each rank to
//   its own cores already), and at most the cgroup's quota divided among the ranks
//   (one cgroup holds all of a node's ranks).
// The loader's worker threads are not counted: they wait on reads most of the time
// (GN2 on 2 cores trains ~15 % faster on 2 compute threads than on 1 with 2 workers
// as with none; docs/performance.md).
ThreadChoice choose_threads(const CpuInputs& in);

// What choose_threads reads, from this process and machine (local_ranks and on_gpu
// are the caller's).
CpuInputs this_machine();

// The CPUs in this process's affinity mask (sched_getaffinity), at least 1.
int affinity_cores();

// The CPU quota of this process's cgroup in cores (cgroup v2 cpu.max, or v1
// cpu.cfs_quota_us / cpu.cfs_period_us), the smallest along its path to the root;
// none when unlimited or unreadable. `root` is where the cgroup file system is
// mounted and `self_cgroup` the text of /proc/self/cgroup.
std::optional<double> cgroup_quota_cores(const std::filesystem::path& root = "/sys/fs/cgroup",
                                         const std::string& self_cgroup = "");

}  // namespace salt
