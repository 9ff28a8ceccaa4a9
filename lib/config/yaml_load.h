// Reading YAML as salt's users write it: anchors, aliases and `<<` merge keys
// (which yaml-cpp 0.7 leaves as plain keys) resolved into a tree that shares no
// nodes, so that later edits to one alias never leak into another.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

#include "config/origins.h"
#include "core/errors.h"

namespace salt::config {

// copy_tree's refusal of a tree past its limits (nested too deeply, too many
// values) when no file is there to name: the caller says where the tree came from
// (the config file or flag whose merge took it past them).
class TreeTooLarge : public UsageError {
 public:
  using UsageError::UsageError;
};

struct LoadedYaml {
  YAML::Node root;
  Origins origins;  // dotted path (relative to root) -> "file:line"
};

// Throws UsageError "<file>: no such file" or "<file>:<line>:<col>: invalid YAML: ...".
LoadedYaml load_yaml_file(const std::string& path);
LoadedYaml load_yaml_string(const std::string& text, const std::string& where);

// A value given on the command line, parsed as YAML (`null`, `true`, `[1,2]`,
// `1e-5`); text that is not valid YAML stays a plain string.
YAML::Node parse_cli_value(const std::string& text);

// Deep copy that resolves merge keys and breaks alias sharing; TreeTooLarge past
// the limits a loaded file has (check_tree_size).
YAML::Node copy_tree(const YAML::Node& node);

// TreeTooLarge when `tree` (a merged config) is past the limits a loaded file has:
// a merge of files each within them may not be.
void check_tree_size(const YAML::Node& tree);

// A scalar that was quoted in the source (tag "!") is a string whatever it looks like.
bool is_quoted(const YAML::Node& scalar);

// map[key] = value, where a null key (`null:`, MaskFormer's null object class) stays
// a null key (written back as `null:`, which PyYAML reads as None) instead of
// becoming the string "" (written `"":`); a second null key replaces the first.
void set_entry(YAML::Node& map, const YAML::Node& key, const YAML::Node& value);
// map's value under `key`, a null key matching a null key; an undefined node if none.
YAML::Node get_entry(const YAML::Node& map, const YAML::Node& key);

}  // namespace salt::config
