#include "core/memory_limit.h"

#include <sys/resource.h>
#include <sys/vfs.h>

#include <cmath>
#include <string>

#include "core/cgroup.h"
#include "core/memory.h"

namespace salt {
namespace fs = std::filesystem;

namespace {

// v1 writes "no limit" as a page-rounded 2^63 - 1; anything this large is none.
constexpr double kNoLimit = 1e18;

std::optional<double> limit_in(const fs::path& file) {
  const auto v = cgroup_number(cgroup_first_line(file));  // v2's "max" is none
  if (!v || *v <= 0 || *v >= kNoLimit) return std::nullopt;
  return v;
}

std::optional<double> v1_limit(const fs::path& dir) { return limit_in(dir / "memory.limit_in_bytes"); }
std::optional<double> v2_limit(const fs::path& dir) { return limit_in(dir / "memory.max"); }

std::optional<double> free_in(const fs::path& limit_file, const fs::path& usage_file) {
  const auto limit = limit_in(limit_file);
  const auto usage = cgroup_number(cgroup_first_line(usage_file));
  if (!limit || !usage) return std::nullopt;
  return std::max(0.0, *limit - *usage);
}

std::optional<double> v1_free(const fs::path& dir) {
  return free_in(dir / "memory.limit_in_bytes", dir / "memory.usage_in_bytes");
}
std::optional<double> v2_free(const fs::path& dir) { return free_in(dir / "memory.max", dir / "memory.current"); }

// Set by keep_within_cgroup_memory: the cgroup's limit, and the cap before ours.
double g_cgroup_limit = 0;
bool g_capped = false;
rlimit g_data_before{};

}  // namespace

std::optional<CgroupMemory> cgroup_memory(const fs::path& root, const std::string& self_cgroup) {
  const auto limit = smallest_cgroup_limit(root, self_cgroup, "memory", v1_limit, v2_limit);
  if (!limit) return std::nullopt;
  const auto free = smallest_cgroup_limit(root, self_cgroup, "memory", v1_free, v2_free);
  return CgroupMemory{*limit, free.value_or(*limit)};
}

std::optional<std::size_t> keep_within_cgroup_memory(int ranks) {
  const auto cgroup = cgroup_memory();
  const double mapped = mapped_data_mb() * (1 << 20);
  if (!cgroup || mapped <= 0) return std::nullopt;
  const double cap = std::floor(mapped + cgroup->free_bytes / std::max(1, ranks));
  rlimit now{};
  if (getrlimit(RLIMIT_DATA, &now) != 0) return std::nullopt;
  if (now.rlim_cur != RLIM_INFINITY && static_cast<double>(now.rlim_cur) <= cap) return std::nullopt;
  rlimit capped = now;
  capped.rlim_cur = static_cast<rlim_t>(cap);
  if (setrlimit(RLIMIT_DATA, &capped) != 0) return std::nullopt;
  if (!g_capped) g_data_before = now;  // the cap before salt's, which helpers get back
  g_capped = true;
  g_cgroup_limit = cgroup->limit_bytes;
  return static_cast<std::size_t>(cap);
}

std::optional<std::size_t> lower_data_cap(double bytes) {
  rlimit now{};
  if (!g_capped || getrlimit(RLIMIT_DATA, &now) != 0 || now.rlim_cur == RLIM_INFINITY) return std::nullopt;
  rlimit lowered = now;
  lowered.rlim_cur = static_cast<rlim_t>(std::max(0.0, static_cast<double>(now.rlim_cur) - std::max(0.0, bytes)));
  if (setrlimit(RLIMIT_DATA, &lowered) != 0) return std::nullopt;
  return static_cast<std::size_t>(lowered.rlim_cur);
}

bool kept_in_memory(const fs::path& dir) {
  constexpr long kTmpfs = 0x01021994, kRamfs = 0x858458f6;  // linux/magic.h
  std::error_code ec;
  auto at = fs::absolute(dir, ec);
  while (!at.empty() && !fs::exists(at, ec) && at.has_parent_path() && at.parent_path() != at) at = at.parent_path();
  struct statfs st {};
  if (statfs(at.c_str(), &st) != 0) return false;
  return static_cast<long>(st.f_type) == kTmpfs || static_cast<long>(st.f_type) == kRamfs;
}

void restore_data_limit_in_child() {
  if (g_capped) setrlimit(RLIMIT_DATA, &g_data_before);
}

std::string mib_text(double bytes) { return std::to_string(static_cast<long long>(bytes / (1 << 20))) + " MiB"; }

std::string memory_limit_text() {
  rlimit as{};
  const bool address_space = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
  if (g_capped && (!address_space || g_cgroup_limit <= static_cast<double>(as.rlim_cur)))
    return " under a limit of " + mib_text(g_cgroup_limit) + " (the job's cgroup memory limit)";
  if (address_space) return " under a limit of " + mib_text(static_cast<double>(as.rlim_cur)) + " (ulimit -v)";
  return "";
}

}  // namespace salt
