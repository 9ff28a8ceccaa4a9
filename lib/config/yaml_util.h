// Small read-only helpers over yaml-cpp nodes that never create entries (yaml-cpp's
// non-const operator[] does).
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

namespace salt::config {

inline bool has_key(const YAML::Node& map, const std::string& key) {
  if (!map.IsMap()) return false;
  for (const auto& kv : map)
    if (kv.first.Scalar() == key) return true;
  return false;
}

inline YAML::Node get(const YAML::Node& map, const std::string& key) {
  if (!map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  for (const auto& kv : map)
    if (kv.first.Scalar() == key) return kv.second;
  return YAML::Node(YAML::NodeType::Undefined);
}

// A value is given: the key is there and not null.
inline bool given(const YAML::Node& n) { return n.IsDefined() && !n.IsNull(); }

// A component node names its class: {class_path: ..., init_args: {...}}.
inline bool is_component(const YAML::Node& node) { return node.IsMap() && has_key(node, "class_path"); }

inline std::string class_path_of(const YAML::Node& node) {
  auto cp = get(node, "class_path");
  return cp && cp.IsScalar() ? cp.Scalar() : std::string();
}

}  // namespace salt::config
