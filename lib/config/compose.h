// Composition of a run's config exactly as salt does it: configs/base.yaml
// first, then the command-line operations strictly left to right (a --config
// merges where it appears, so a later --config overrides an earlier --x.y=v),
// then validation against the schema and salt's links (name -> model.name,
// data.global_object -> model.global_object).
#pragma once
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "config/origins.h"
#include "config/run_config.h"

namespace salt::config {

struct ConfigOp {
  // kMergeText merges YAML that is no file of the user's (the config a
  // checkpoint carries): errors name it by `target`, e.g. "model.ckpt (the
  // config it carries)".
  enum class Kind { kMergeFile, kMergeText, kSet, kAppend };
  Kind kind = Kind::kSet;
  std::string target;  // file path (kMergeFile), the text's name (kMergeText) or
                       // dotted key
  std::string value;   // raw text, parsed as YAML (kSet, kAppend), or the YAML
                       // document (kMergeText)
  std::string token;   // what the user typed, for error messages
};

struct Composed {
  YAML::Node tree;  // merged, not yet validated
  Origins origins;
};

// Applies `ops` on top of `base_file` (skipped when empty).
Composed compose(const std::string &base_file, const std::vector<ConfigOp> &ops);

struct ResolvedConfig {
  YAML::Node config;  // validated, all defaults explicit: what --print_config prints
  RunConfig run;      // the same as typed settings
  Origins origins;
  std::vector<std::string> warnings;
};

// What the config says about one setting, for the submit helpers' agreement
// checks and messages: its text as written ('auto', a flow-style list), where
// it was set, and as a count (an int, or a list's length; nullopt for 'auto').
struct Setting {
  std::optional<int> value;
  std::string text;
  std::string origin;
};
Setting setting(const ResolvedConfig &resolved, const std::string &section, const std::string &key);

// compose + validate + links + typed settings.
ResolvedConfig resolve(const std::string &base_file, const std::vector<ConfigOp> &ops);

// Where configs/base.yaml is: $SALT_BASE_CONFIG, else next to the binary
// (<exe>/../configs, <exe>/../../configs, <prefix>/share/salt/configs), else
// the source tree the binary was built from. Throws UsageError when none
// exists.
std::string find_base_config();

// YAML text of a resolved config that salt-cpp (and any YAML parser) reads
// back.
std::string to_yaml(const YAML::Node &config);

}  // namespace salt::config
