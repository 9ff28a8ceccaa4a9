// This process's cgroups (/proc/self/cgroup), v2 and v1: the limits that batch
// systems and containers set (Slurm's --cpus-per-task and --mem, docker --cpus and
// --memory, HTCondor's request_memory) are read from the files there.
#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace salt {

// A limit read from one cgroup folder; none where the folder sets none.
using CgroupRead = std::function<std::optional<double>(const std::filesystem::path& dir)>;

// The smallest limit from this process's cgroup up to its hierarchy's root (a
// parent's limit binds its children), over the unified hierarchy (v2, `read_v2`)
// and the v1 hierarchy holding `v1_controller` (`read_v1`). `root`: where the cgroup
// file system is mounted; `self_cgroup`: the text of /proc/self/cgroup ("" reads it).
std::optional<double> smallest_cgroup_limit(const std::filesystem::path& root, const std::string& self_cgroup,
                                            const std::string& v1_controller, const CgroupRead& read_v1,
                                            const CgroupRead& read_v2);

// The folder of this process's own cgroup: v1's for `v1_controller` when that
// hierarchy is mounted, else the unified one; `v2` says which. None if neither.
std::optional<std::filesystem::path> own_cgroup_dir(const std::filesystem::path& root, const std::string& self_cgroup,
                                                    const std::string& v1_controller, bool* v2 = nullptr);

// A cgroup file's first line, and a number in it (none for "max", "-1" or text).
std::string cgroup_first_line(const std::filesystem::path& file);
std::optional<double> cgroup_number(const std::string& text);

}  // namespace salt
