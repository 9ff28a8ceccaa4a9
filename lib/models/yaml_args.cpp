#include "models/yaml_args.h"

#include <algorithm>

#include "core/errors.h"

namespace salt::models::yaml {

namespace {

std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

std::string describe(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "null";
}

template <class T>
T convert(const YAML::Node& n, const std::string& path, const char* what) {
  if (!n.IsScalar()) throw UsageError(path + ": expected " + what + ", got " + describe(n));
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw UsageError(path + ": expected " + what + ", got " + describe(n));
  }
}

}  // namespace

YAML::Node as_map(const YAML::Node& node, const std::string& path) {
  if (!node || node.IsNull()) return YAML::Node(YAML::NodeType::Map);
  if (!node.IsMap()) throw UsageError(path + ": expected a mapping, got " + describe(node));
  return node;
}

void check_keys(const YAML::Node& map, const std::string& path, std::initializer_list<const char*> allowed) {
  for (const auto& kv : map) {
    const auto key = kv.first.Scalar();
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; })) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      throw UsageError(join(path, key) + ": unknown key (expected one of " + list + ")");
    }
  }
}

bool has(const YAML::Node& map, const std::string& key) {
  const auto n = map[key];
  return n && !n.IsNull();
}

std::string get_string(const YAML::Node& map, const std::string& key, const std::string& path) {
  if (!has(map, key)) throw UsageError(join(path, key) + ": required key missing");
  return convert<std::string>(map[key], join(path, key), "a string");
}
std::string get_string(const YAML::Node& map, const std::string& key, const std::string& path, const std::string& d) {
  return has(map, key) ? convert<std::string>(map[key], join(path, key), "a string") : d;
}
int64_t get_int(const YAML::Node& map, const std::string& key, const std::string& path) {
  if (!has(map, key)) throw UsageError(join(path, key) + ": required key missing");
  return convert<int64_t>(map[key], join(path, key), "an integer");
}
int64_t get_int(const YAML::Node& map, const std::string& key, const std::string& path, int64_t d) {
  return has(map, key) ? convert<int64_t>(map[key], join(path, key), "an integer") : d;
}
double get_double(const YAML::Node& map, const std::string& key, const std::string& path, double d) {
  return has(map, key) ? convert<double>(map[key], join(path, key), "a number") : d;
}
bool get_bool(const YAML::Node& map, const std::string& key, const std::string& path, bool d) {
  return has(map, key) ? convert<bool>(map[key], join(path, key), "true or false") : d;
}
std::optional<int64_t> get_opt_int(const YAML::Node& map, const std::string& key, const std::string& path) {
  if (!has(map, key)) return std::nullopt;
  return convert<int64_t>(map[key], join(path, key), "an integer");
}
std::optional<double> get_opt_double(const YAML::Node& map, const std::string& key, const std::string& path) {
  if (!has(map, key)) return std::nullopt;
  return convert<double>(map[key], join(path, key), "a number");
}
std::optional<std::string> get_opt_string(const YAML::Node& map, const std::string& key, const std::string& path) {
  if (!has(map, key)) return std::nullopt;
  return convert<std::string>(map[key], join(path, key), "a string");
}

namespace {
template <class T>
std::optional<std::vector<T>> get_list(const YAML::Node& map, const std::string& key, const std::string& path,
                                       const char* what) {
  if (!has(map, key)) return std::nullopt;
  const auto n = map[key];
  const auto p = join(path, key);
  std::vector<T> out;
  if (n.IsScalar()) {
    out.push_back(convert<T>(n, p, what));
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) out.push_back(convert<T>(n[i], p + "[" + std::to_string(i) + "]", what));
  } else {
    throw UsageError(p + ": expected a list, got " + describe(n));
  }
  return out;
}
}  // namespace

std::optional<std::vector<std::string>> get_opt_strings(const YAML::Node& map, const std::string& key,
                                                        const std::string& path) {
  return get_list<std::string>(map, key, path, "a string");
}
std::optional<std::vector<int64_t>> get_opt_ints(const YAML::Node& map, const std::string& key, const std::string& path) {
  return get_list<int64_t>(map, key, path, "an integer");
}
std::optional<std::vector<float>> get_opt_floats(const YAML::Node& map, const std::string& key, const std::string& path) {
  return get_list<float>(map, key, path, "a number");
}

void require_unset(const YAML::Node& map, const std::string& key, const std::string& path) {
  if (!has(map, key)) return;
  const auto n = map[key];
  if (n.IsScalar()) {
    const auto& s = n.Scalar();
    if (s == "false" || s == "False" || s == "0" || s == "0.0") return;
  }
  if ((n.IsMap() || n.IsSequence()) && n.size() == 0) return;
  throw UsageError(join(path, key) + ": not supported by salt-cpp yet (leave it unset)");
}

void require_value(const YAML::Node& map, const std::string& key, const std::string& path, int64_t expected) {
  if (!has(map, key)) return;
  if (get_int(map, key, path) != expected)
    throw UsageError(join(path, key) + ": only " + std::to_string(expected) + " is supported by salt-cpp yet");
}

}  // namespace salt::models::yaml
