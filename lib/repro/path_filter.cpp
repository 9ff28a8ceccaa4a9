#include "repro/path_filter.h"

namespace salt::repro {
namespace fs = std::filesystem;

PathFilter::PathFilter(const fs::path& workdir, const std::vector<fs::path>& exclude) {
  // weakly_canonical on both sides: libgit2 reports the workdir with symlinks
  // resolved (/tmp -> /private/tmp and the like), and the excluded path may not
  // exist yet (a run root about to be created).
  std::error_code ec;
  fs::path top = fs::weakly_canonical(workdir, ec);
  if (ec) top = workdir;
  for (const auto& e : exclude) {
    fs::path abs = e.is_absolute() ? e : workdir / e;
    fs::path canon = fs::weakly_canonical(abs, ec);
    if (ec) canon = abs.lexically_normal();
    fs::path rel = canon.lexically_relative(top);
    std::string s = rel.generic_string();
    while (!s.empty() && s.back() == '/') s.pop_back();
    // Outside the tree ("../x"), or the whole tree ("."): nothing to exclude
    // (excluding the whole tree would turn the check off).
    if (s.empty() || s == "." || s.rfind("..", 0) == 0) continue;
    prefixes_.push_back(s);
  }
}

bool PathFilter::excluded(const std::string& rel) const {
  for (const auto& p : prefixes_) {
    if (rel.size() < p.size() || rel.compare(0, p.size(), p) != 0) continue;
    if (rel.size() == p.size() || rel[p.size()] == '/') return true;
  }
  return false;
}

}  // namespace salt::repro
