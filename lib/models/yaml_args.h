// Reading salt's class_path/init_args YAML for the model factory: typed getters
// whose errors name the key path, strict key checks, and YAML merge keys (`<<`,
// which yaml-cpp leaves unresolved).
#pragma once
#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace salt::models::yaml {

// A map node (or null/absent = empty map) at `path`; UsageError otherwise.
YAML::Node as_map(const YAML::Node& node, const std::string& path);

// UsageError for a key of `map` not in `allowed`.
void check_keys(const YAML::Node& map, const std::string& path, std::initializer_list<const char*> allowed);

bool has(const YAML::Node& map, const std::string& key);  // present and not null

std::string get_string(const YAML::Node& map, const std::string& key, const std::string& path);
std::string get_string(const YAML::Node& map, const std::string& key, const std::string& path, const std::string& dflt);
int64_t get_int(const YAML::Node& map, const std::string& key, const std::string& path);
int64_t get_int(const YAML::Node& map, const std::string& key, const std::string& path, int64_t dflt);
double get_double(const YAML::Node& map, const std::string& key, const std::string& path, double dflt);
bool get_bool(const YAML::Node& map, const std::string& key, const std::string& path, bool dflt);
std::optional<int64_t> get_opt_int(const YAML::Node& map, const std::string& key, const std::string& path);
std::optional<double> get_opt_double(const YAML::Node& map, const std::string& key, const std::string& path);
std::optional<std::string> get_opt_string(const YAML::Node& map, const std::string& key, const std::string& path);
// A list, or a scalar taken as a one-element list (salt's listify); nullopt if absent/null.
std::optional<std::vector<std::string>> get_opt_strings(const YAML::Node& map, const std::string& key,
                                                        const std::string& path);
std::optional<std::vector<int64_t>> get_opt_ints(const YAML::Node& map, const std::string& key, const std::string& path);
std::optional<std::vector<float>> get_opt_floats(const YAML::Node& map, const std::string& key, const std::string& path);

// For salt features salt-cpp does not implement: the key must be absent or hold
// its default (null, false or the given number); UsageError otherwise.
void require_unset(const YAML::Node& map, const std::string& key, const std::string& path);
void require_value(const YAML::Node& map, const std::string& key, const std::string& path, int64_t expected);

}  // namespace salt::models::yaml
