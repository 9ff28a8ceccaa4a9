#include "data/data_config.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace salt::data {

std::string DataConfig::dataset_of(const std::string& input) const {
  auto it = input_map.find(input);
  return it == input_map.end() ? input : it->second;
}

namespace {

template <typename T>
void get(const YAML::Node& n, const char* key, T& out) {
  const YAML::Node v = n[key];
  if (!v || v.IsNull()) return;
  try {
    out = v.as<T>();
  } catch (const YAML::Exception&) {
    throw UsageError(fmt::format("data.{} has the wrong type", key));
  }
}

void get_opt(const YAML::Node& n, const char* key, std::optional<std::string>& out) {
  const YAML::Node v = n[key];
  if (!v || v.IsNull()) return;
  out = v.as<std::string>();
}

}  // namespace

DataConfig data_config_from_yaml(const YAML::Node& data) {
  DataConfig c;
  if (!data || data.IsNull()) return c;
  if (!data.IsMap()) throw UsageError("data must be a mapping");
  get(data, "train_file", c.train_file);
  get(data, "val_file", c.val_file);
  get(data, "test_file", c.test_file);
  get(data, "norm_dict", c.norm_dict);
  get(data, "class_dict", c.class_dict);
  get(data, "global_object", c.global_object);
  if (const YAML::Node vars = data["variables"]; vars && vars.IsMap()) {
    for (const auto& kv : vars) {
      const std::string input = kv.first.as<std::string>();
      std::vector<std::string> list;
      if (kv.second && !kv.second.IsNull()) list = kv.second.as<std::vector<std::string>>();
      c.variables[input] = list;
      c.input_order.push_back(input);
    }
  }
  if (const YAML::Node m = data["input_map"]; m && m.IsMap())
    for (const auto& kv : m) {
      const std::string k = kv.first.as<std::string>();
      if (!k.empty() && k[0] == '_') continue;  // salt ignores keys starting with '_'
      c.input_map[k] = kv.second.as<std::string>();
    }
  // salt maps "global" (and "parameters") to the global object's dataset.
  if (c.input_map.count("global")) c.input_map["global"] = c.global_object;
  for (const auto& in : c.input_order)
    if (!c.input_map.count(in)) c.input_map[in] = in == "global" ? c.global_object : in;
  if (const YAML::Node n = data["num_inputs"]; n && n.IsMap())
    for (const auto& kv : n) c.num_inputs[kv.first.as<std::string>()] = kv.second.as<int64_t>();
  get(data, "batch_size", c.batch_size);
  get(data, "num_workers", c.num_workers);
  get(data, "num_train", c.num_train);
  get(data, "num_val", c.num_val);
  get(data, "num_test", c.num_test);
  get_opt(data, "move_files_temp", c.move_files_temp);
  get_opt(data, "test_suff", c.test_suff);
  get(data, "pin_memory", c.pin_memory);
  get(data, "persistent_workers", c.persistent_workers);
  get(data, "prefetch_factor", c.prefetch_factor);
  get(data, "non_finite_to_num", c.non_finite_to_num);
  get(data, "ignore_finite_checks", c.ignore_finite_checks);
  return c;
}

}  // namespace salt::data
