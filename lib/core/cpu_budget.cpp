#include "core/cpu_budget.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

namespace salt {
namespace fs = std::filesystem;

namespace {

std::string plural(int n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

std::optional<double> number(const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == 0 || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// cgroup v2: "max 100000" (no limit) or "<quota> <period>".
std::optional<double> v2_quota(const fs::path& dir) {
  std::istringstream line(first_line(dir / "cpu.max"));
  std::string quota, period;
  if (!(line >> quota >> period) || quota == "max") return std::nullopt;
  const auto q = number(quota), p = number(period);
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
  return *q / *p;
}

// cgroup v1: cpu.cfs_quota_us (-1: no limit) over cpu.cfs_period_us.
std::optional<double> v1_quota(const fs::path& dir) {
  const auto q = number(first_line(dir / "cpu.cfs_quota_us")), p = number(first_line(dir / "cpu.cfs_period_us"));
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
  return *q / *p;
}

// The smallest quota from `dir` up to `top` (a parent's limit binds its children).
template <typename Read>
std::optional<double> smallest_up_to(fs::path dir, const fs::path& top, Read read) {
  std::optional<double> best;
  for (int guard = 0; guard < 64; ++guard) {
    if (auto q = read(dir); q && (!best || *q < *best)) best = q;
    if (dir == top || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return best;
}

std::string read_all(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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
  const std::string text = self_cgroup.empty() ? read_all("/proc/self/cgroup") : self_cgroup;
  std::istringstream lines(text);
  std::optional<double> best;
  auto keep = [&](std::optional<double> q) {
    if (q && (!best || *q < *best)) best = q;
  };
  for (std::string line; std::getline(lines, line);) {
    // "<id>:<controllers>:<path>"; v2 is "0::<path>"
    const auto a = line.find(':'), b = line.find(':', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const auto controllers = line.substr(a + 1, b - a - 1);
    const auto path = fs::path(line.substr(b + 1)).relative_path();
    if (controllers.empty()) {
      keep(smallest_up_to(root / path, root, v2_quota));
    } else {
      std::stringstream list(controllers);
      for (std::string c; std::getline(list, c, ',');)
        if (c == "cpu") {
          const auto mount = root / controllers;  // "cpu,cpuacct"
          keep(smallest_up_to(mount / path, mount, v1_quota));
        }
    }
  }
  return best;
}

}  // namespace salt
