// The memory limits a job runs under, and how a computing command keeps within a
// cgroup's. Under a cgroup memory limit (Slurm's --mem, HTCondor's request_memory,
// docker --memory) the kernel refuses no allocation: once the cgroup is full it
// kills the process (SIGKILL, exit 137), which leaves a half-written run
// directory. So a CPU command caps its private writable memory (RLIMIT_DATA) at
// what it maps now plus its share of what the cgroup has free: resident memory
// never outgrows what is mapped, so the cgroup cannot fill, and an allocation
// past the cap fails as under `ulimit -v`, in the one-line out-of-memory error.
// GPU runs are left alone: the CUDA driver maps memory of its own.
#pragma once
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace salt {

struct CgroupMemory {
  double limit_bytes = 0;  // the smallest limit from the process's cgroup up
  double free_bytes = 0;   // the least any of those cgroups has left (limit - usage)
};
// None where no cgroup up the hierarchy limits memory. `root`, `self_cgroup`: as
// for smallest_cgroup_limit (core/cgroup.h).
std::optional<CgroupMemory> cgroup_memory(const std::filesystem::path& root = "/sys/fs/cgroup",
                                          const std::string& self_cgroup = "");

// Caps RLIMIT_DATA at the mapped private writable memory (VmData) plus the
// cgroup's free memory divided among the node's `ranks`, where that is lower than
// the cap in force. Returns the cap set, in bytes; none where nothing was capped.
std::optional<std::size_t> keep_within_cgroup_memory(int ranks);
// Lowers the cap keep_within_cgroup_memory set by `bytes` the process has since
// put in memory that the cgroup counts and RLIMIT_DATA does not (copies in
// tmpfs). Nothing where no cap was set (GPU runs, no cgroup limit). Returns the
// new cap.
std::optional<std::size_t> lower_data_cap(double bytes);
// Whether files written under `dir` stay in memory (tmpfs or ramfs, e.g.
// /dev/shm), charged to the job's cgroup until removed. `dir` need not exist yet:
// its first existing parent is asked.
bool kept_in_memory(const std::filesystem::path& dir);
// In a forked child before exec (async-signal-safe): the cap in force before
// keep_within_cgroup_memory, so that helpers (git, Node) run as they would.
void restore_data_limit_in_child();

// The tightest limit on this process's memory for messages, e.g. " under a limit
// of 683 MiB (ulimit -v)" or " under a limit of 400 MiB (the job's cgroup memory
// limit)"; "" without one.
std::string memory_limit_text();
// Bytes as whole MiB for messages ("683 MiB").
std::string mib_text(double bytes);

}  // namespace salt
