// Helpers for the config tests: compose from command-line tokens exactly as
// `salt fit` does, with files written into a temp dir.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "config/compose.h"
#include "config/run_args.h"
#include "support/test_support.h"

namespace salt::testing {

inline std::string repo_config(const std::string& name) { return (source_dir() / "configs" / name).string(); }

// Resolves `args` on top of the repository's configs/base.yaml (or `base`).
inline config::ResolvedConfig resolve_args(const std::vector<std::string>& args,
                                           const std::string& base = repo_config("base.yaml")) {
  auto run = config::parse_run_args("fit", args);
  return config::resolve(base, run.ops);
}

inline config::Composed compose_args(const std::vector<std::string>& args, const std::string& base = "") {
  auto run = config::parse_run_args("fit", args);
  return config::compose(base, run.ops);
}

inline std::string yaml_of(const YAML::Node& node) {
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

}  // namespace salt::testing
