// Paths inside the working tree that are not code: the run outputs (logs/),
// when they live in the repository without being ignored. Left out of both the
// dirty check and the patch, or a second run would be refused because of the
// first run's directory, and the patch would carry its checkpoints.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace salt::repro {

class PathFilter {
 public:
  PathFilter() = default;
  // `exclude`: files or directories, absolute or relative to `workdir`; those
  // outside the working tree are dropped (they cannot match).
  PathFilter(const std::filesystem::path& workdir, const std::vector<std::filesystem::path>& exclude);
  // `rel`: a '/'-separated path relative to the top of the working tree, as
  // libgit2 reports it. True when it is one of the excluded paths or below one.
  bool excluded(const std::string& rel) const;
  bool empty() const { return prefixes_.empty(); }

 private:
  std::vector<std::string> prefixes_;  // relative, '/'-separated, no trailing '/'
};

}  // namespace salt::repro
