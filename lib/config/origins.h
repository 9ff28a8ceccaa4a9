// Where each config value came from ("configs/GN2.yaml:42" or "command line
// '--trainer.max_epochs=3'"), keyed by dotted path, so that an error found after
// composition can still name the file and line the user has to edit.
#pragma once
#include <map>
#include <string>

namespace salt::config {

using Origins = std::map<std::string, std::string>;

inline std::string join_path(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// The origin of `path`, or of its closest recorded ancestor; empty if none.
inline std::string origin_of(const Origins& origins, std::string path) {
  while (true) {
    auto it = origins.find(path);
    if (it != origins.end()) return it->second;
    auto dot = path.rfind('.');
    if (dot == std::string::npos) return "";
    path.erase(dot);
  }
}

// Records `where` for `path` and forgets whatever was recorded below it (the
// subtree was replaced).
inline void record_origin(Origins& origins, const std::string& path, const std::string& where) {
  auto prefix = path + ".";
  for (auto it = origins.lower_bound(prefix); it != origins.end() && it->first.compare(0, prefix.size(), prefix) == 0;)
    it = origins.erase(it);
  origins[path] = where;
}

}  // namespace salt::config
