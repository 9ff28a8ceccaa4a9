#include "config/mup_config.h"

#include "config/compose.h"
#include "config/run_config.h"
#include "config/yaml_load.h"
#include "core/errors.h"

namespace salt::config {
namespace {

std::vector<std::string> string_list(const YAML::Node& n, const std::string& path) {
  std::vector<std::string> out;
  if (!n || !n.IsSequence()) throw UsageError(path + ": expected a list of names");
  for (const auto& s : n) out.push_back(s.Scalar());
  return out;
}

// A proxy's width: 1 to kMaxMupWidth. Before, 10^8 or INT64_MAX reached LibTorch,
// whose out-of-memory or "Storage size calculation overflowed" named no key.
int64_t width(const YAML::Node& n, const std::string& path) {
  const auto refuse = [&] {
    return UsageError(path + ": expected a width from 1 to " + std::to_string(kMaxMupWidth) + ", got '" +
                      (n && n.IsScalar() ? n.Scalar() : std::string(n ? "a list or mapping" : "nothing")) + "'");
  };
  int64_t v = 0;
  try {
    v = n.as<int64_t>();
  } catch (const YAML::Exception&) {
    throw refuse();
  }
  if (v < 1 || v > kMaxMupWidth) throw refuse();
  return v;
}

// Sets the first `key` found depth-first in `node` (a mapping); false if none.
bool set_first(YAML::Node node, const std::string& key, int64_t value) {
  if (!node.IsMap()) return false;
  if (node[key]) {
    node.remove(key);  // a fresh scalar: never write through a YAML alias shared with other keys
    node[key] = value;
    return true;
  }
  for (auto kv : node)
    if (kv.second.IsMap() && set_first(kv.second, key, value)) return true;
  return false;
}

}  // namespace

MupConfig read_mup_config(const YAML::Node& node) {
  MupConfig c;
  if (!node || node.IsNull()) return c;
  if (!node.IsMap()) throw UsageError("model.mup_config: expected a mapping");
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string path = "model.mup_config." + key;
    if (key == "shape_path") {
      c.shape_path = kv.second.Scalar();
      continue;
    }
    if (!kv.second.IsMap())
      throw UsageError(path + ": expected {apply_to, parameter_name, parameter_base, parameter_delta}");
    MupParameter p;
    p.name = key;
    p.apply_to = string_list(kv.second["apply_to"], path + ".apply_to");
    p.parameter_name = string_list(kv.second["parameter_name"], path + ".parameter_name");
    if (p.apply_to.size() != p.parameter_name.size())
      throw UsageError(path + ": give one parameter_name per apply_to entry (" + std::to_string(p.apply_to.size()) +
                       " vs " + std::to_string(p.parameter_name.size()) + ")");
    p.parameter_base = width(kv.second["parameter_base"], path + ".parameter_base");
    p.parameter_delta = width(kv.second["parameter_delta"], path + ".parameter_delta");
    if (p.parameter_base == p.parameter_delta)
      throw UsageError(path + ": parameter_base and parameter_delta must differ (their difference marks the width)");
    for (const auto& entry : kv.second) {
      const auto name = entry.first.Scalar();
      if (name != "apply_to" && name != "parameter_name" && name != "parameter_base" && name != "parameter_delta")
        throw UsageError(path + "." + name + ": unknown key (apply_to, parameter_name, parameter_base, parameter_delta)");
    }
    c.parameters.push_back(std::move(p));
  }
  if (c.parameters.empty()) throw UsageError("model.mup_config: name at least one width (e.g. embed_dim: {apply_to, ...})");
  return c;
}

std::filesystem::path mup_shapes_file(const MupConfig& config) {
  return std::filesystem::path(config.shape_path) / "storeshapes";
}

YAML::Node mup_proxy_config(const YAML::Node& resolved, const MupConfig& config, bool base) {
  YAML::Node out = copy_tree(resolved);
  YAML::Node init_args = out["model"]["model"]["init_args"];
  for (const auto& p : config.parameters) {
    const int64_t value = base ? p.parameter_base : p.parameter_delta;
    for (size_t i = 0; i < p.apply_to.size(); ++i) {
      const std::string where = "model.mup_config." + p.name + ": '" + p.parameter_name[i] + "' in model.model.init_args." +
                                p.apply_to[i];
      YAML::Node target = init_args[p.apply_to[i]];
      if (!target || target.IsNull()) throw UsageError(where + ": model.model.init_args has no '" + p.apply_to[i] + "'");
      bool found = false;
      if (target.IsSequence()) {
        for (auto entry : target) found = set_first(entry, p.parameter_name[i], value) || found;
      } else {
        found = set_first(target, p.parameter_name[i], value);
      }
      if (!found) throw UsageError(where + ": key not found");
    }
  }
  out["model"].remove("mup_config");
  return out;
}

ResolvedConfig mup_proxy(const ResolvedConfig& resolved, const MupConfig& config, bool base) {
  ResolvedConfig out = resolved;
  out.config = mup_proxy_config(resolved.config, config, base);
  out.run = read_run_config(out.config);
  return out;
}

}  // namespace salt::config
