// The composition rules salt's users know from jsonargparse, as operations on a
// config tree: maps merge recursively, lists and scalars are replaced, `+=`
// appends, and components (class_path + init_args) follow the class rule: the
// same class merges its init_args, a different class keeps only the arguments the
// new class accepts.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <vector>

namespace salt::config {

// Whether `class_path` accepts an init_arg called `arg` (answered by the schema).
using AcceptsArg = std::function<bool(const std::string& class_path, const std::string& arg)>;

// Returns a new node: `src` merged over `dst` (either may be undefined).
YAML::Node merge_values(const YAML::Node& dst, const YAML::Node& src, const AcceptsArg& accepts);

std::vector<std::string> split_path(const std::string& dotted);
// `s` cut at every `sep` (empty pieces kept: "a,,b" -> a, "", b).
std::vector<std::string> split_at(const std::string& s, char sep);

// Merges `value` at the dotted `path` of `root`, creating maps on the way. Inside
// a component, keys other than class_path/init_args/dict_kwargs are looked up in
// its init_args, so `--model.model.encoder.num_layers=2` works like the full
// `--model.model.init_args.encoder.init_args.num_layers=2`. Numeric segments index
// lists. Returns the canonical path that was written (with init_args spelt out).
// Throws UsageError naming `token` when the path cannot be followed.
std::string set_path(YAML::Node root, const std::string& path, const YAML::Node& value, const AcceptsArg& accepts,
                     const std::string& token);

// Appends `value` to the list at `path` (a missing or null value becomes a list).
std::string append_path(YAML::Node root, const std::string& path, const YAML::Node& value, const std::string& token);

}  // namespace salt::config
