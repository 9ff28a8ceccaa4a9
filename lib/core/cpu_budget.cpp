#include "core/cpu_budget.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/cgroup.h"

namespace salt {
namespace fs = std::filesystem;

namespace {

std::string plural(int n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

// cgroup v2: "max 100000" (no limit) or "<quota> <period>".
std::optional<double> v2_quota(const fs::path& dir) {
  std::istringstream line(cgroup_first_line(dir / "cpu.max"));
  std::string quota, period;
  if (!(line >> quota >> period) || quota == "max") return std::nullopt;
  const auto q = cgroup_number(quota), p = cgroup_number(period);
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
  return *q / *p;
}

// cgroup v1: cpu.cfs_quota_us (-1: no limit) over cpu.cfs_period_us.
std::optional<double> v1_quota(const fs::path& dir) {
  const auto q = cgroup_number(cgroup_first_line(dir / "cpu.cfs_quota_us")),
             p = cgroup_number(cgroup_first_line(dir / "cpu.cfs_period_us"));
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
  return *q / *p;
}

}  // namespace

ThreadChoice choose_threads(const CpuInputs& in) {
  if (in.on_gpu) return {1, "a GPU run (the card computes; the host's tensors are small)"};
  const int ranks = std::max(1, in.local_ranks), mask = std::max(1, in.affinity_cores);
  const bool bound = mask < in.machine_cores;  // the mask is this rank's own
  int threads = bound ? mask : mask / ranks;
  std::string why = plural(mask, "core") + " in the affinity mask" +
                    (bound ? " (this rank's own)" : ranks > 1 ? " shared by " + plural(ranks, "rank") + " on this node" : "");
  if (in.quota_cores) {
    const int share = static_cast<int>(std::floor(*in.quota_cores / ranks));
    if (share < threads) {
      threads = share;
      std::ostringstream q;
      q << *in.quota_cores;
      why = "a cgroup CPU quota of " + q.str() + " cores" + (ranks > 1 ? " shared by " + plural(ranks, "rank") : "");
    }
  }
  return {std::max(1, threads), why};
}

CpuInputs this_machine() {
  CpuInputs in;
  in.affinity_cores = affinity_cores();
  in.machine_cores = std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  in.quota_cores = cgroup_quota_cores();
  return in;
}

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

std::optional<double> cgroup_quota_cores(const fs::path& root, const std::string& self_cgroup) {
  return smallest_cgroup_limit(root, self_cgroup, "cpu", v1_quota, v2_quota);
}

}  // namespace salt
