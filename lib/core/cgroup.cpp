#include "core/cgroup.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

namespace salt {
namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One line of /proc/self/cgroup: "<id>:<controllers>:<path>"; v2 is "0::<path>".
struct CgroupLine {
  std::vector<std::string> controllers;  // empty for v2
  fs::path path;                         // relative to the hierarchy's root
  std::string mount;                     // v1: the folder name ("cpu,cpuacct")
};

std::vector<CgroupLine> cgroup_lines(const std::string& self_cgroup) {
  const std::string text = self_cgroup.empty() ? read_all("/proc/self/cgroup") : self_cgroup;
  std::istringstream lines(text);
  std::vector<CgroupLine> out;
  for (std::string line; std::getline(lines, line);) {
    const auto a = line.find(':'), b = line.find(':', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    CgroupLine l;
    l.mount = line.substr(a + 1, b - a - 1);
    l.path = fs::path(line.substr(b + 1)).relative_path();
    std::stringstream list(l.mount);
    for (std::string c; std::getline(list, c, ',');) l.controllers.push_back(c);
    out.push_back(std::move(l));
  }
  return out;
}

bool holds(const CgroupLine& l, const std::string& controller) {
  for (const auto& c : l.controllers)
    if (c == controller) return true;
  return false;
}

std::optional<double> smallest_up_to(fs::path dir, const fs::path& top, const CgroupRead& read) {
  std::optional<double> best;
  for (int guard = 0; guard < 64; ++guard) {
    if (auto q = read(dir); q && (!best || *q < *best)) best = q;
    if (dir == top || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return best;
}

}  // namespace

std::string cgroup_first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

std::optional<double> cgroup_number(const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == 0 || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<double> smallest_cgroup_limit(const fs::path& root, const std::string& self_cgroup,
                                            const std::string& v1_controller, const CgroupRead& read_v1,
                                            const CgroupRead& read_v2) {
  std::optional<double> best;
  for (const auto& l : cgroup_lines(self_cgroup)) {
    std::optional<double> q;
    if (l.controllers.empty()) q = smallest_up_to(root / l.path, root, read_v2);
    else if (holds(l, v1_controller)) q = smallest_up_to(root / l.mount / l.path, root / l.mount, read_v1);
    if (q && (!best || *q < *best)) best = q;
  }
  return best;
}

std::optional<fs::path> own_cgroup_dir(const fs::path& root, const std::string& self_cgroup,
                                       const std::string& v1_controller, bool* v2) {
  std::optional<fs::path> unified;
  for (const auto& l : cgroup_lines(self_cgroup)) {
    if (l.controllers.empty()) {
      unified = root / l.path;
    } else if (holds(l, v1_controller) && fs::is_directory(root / l.mount / l.path)) {
      if (v2) *v2 = false;
      return root / l.mount / l.path;
    }
  }
  if (unified && v2) *v2 = true;
  return unified;
}

}  // namespace salt
