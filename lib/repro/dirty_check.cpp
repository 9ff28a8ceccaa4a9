#include "repro/dirty_check.h"

#include <algorithm>

#include "core/errors.h"

namespace salt::repro {

namespace {
// File names may hold anything but '/' and NUL; keep the message on one line.
std::string printable(const std::string& path) {
  std::string out;
  for (unsigned char c : path) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) out += '?';
    else out += static_cast<char>(c);
  }
  return out;
}
}  // namespace

std::string describe_dirty(const RepoState& state, size_t max_paths) {
  std::string out;
  size_t shown = std::min(max_paths, state.dirty.size());
  for (size_t i = 0; i < shown; ++i) {
    if (i) out += ", ";
    out += state.dirty[i].label() + ": " + printable(state.dirty[i].path);
  }
  if (state.dirty.size() > shown) out += " and " + std::to_string(state.dirty.size() - shown) + " more";
  return out;
}

void refuse_if_dirty(const RepoState& state) {
  if (!state.is_dirty()) return;
  throw InputError("uncommitted changes in " + state.workdir.string() + " (" + describe_dirty(state) +
                   "); commit them or rerun with --force (which records them in <run>/uncommitted.patch)");
}

std::vector<std::filesystem::path> salt_output_dirs(const std::filesystem::path& logs_root,
                                                    const std::filesystem::path& workdir) {
  std::vector<std::filesystem::path> dirs{workdir / "slurm", workdir / "condor"};
  if (!logs_root.empty()) dirs.insert(dirs.begin(), std::filesystem::absolute(logs_root).lexically_normal());
  return dirs;
}

}  // namespace salt::repro
