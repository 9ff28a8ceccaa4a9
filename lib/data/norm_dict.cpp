#include "data/norm_dict.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace salt::data {

namespace {

YAML::Node load_yaml(const std::filesystem::path& path, const char* what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(fmt::format("{} {} is a directory, not a {} file", what, path.string(), what));
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(fmt::format("{} not found: {}", what, path.string()));
  try {
    return YAML::LoadFile(path.string());
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("Cannot parse {} {}: {}", what, path.string(), e.what()));
  }
}

double number(const YAML::Node& n, const std::string& where) {
  if (!n || !n.IsScalar()) throw InputError(fmt::format("{} is missing or not a number", where));
  const std::string s = n.Scalar();
  // YAML's spellings of the non-finite values, so they reach the finiteness check.
  if (s == ".nan" || s == ".NaN" || s == ".NAN" || s == "nan" || s == "NaN") return std::nan("");
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "inf" || s == "+.inf") return INFINITY;
  if (s == "-.inf" || s == "-.Inf" || s == "-.INF" || s == "-inf") return -INFINITY;
  try {
    return n.as<double>();
  } catch (const YAML::Exception&) {
    throw InputError(fmt::format("{} is not a number: '{}'", where, s));
  }
}

std::string keys_of(const std::map<std::string, std::map<std::string, std::pair<double, double>>>& m) {
  std::string out;
  for (const auto& [k, v] : m) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace

NormDict read_norm_dict(const std::filesystem::path& path) {
  YAML::Node root = load_yaml(path, "norm_dict");
  if (!root.IsMap()) throw InputError(fmt::format("norm_dict {} must map dataset names to variables", path.string()));
  NormDict d;
  d.path = path;
  for (const auto& ds : root) {
    const std::string name = ds.first.as<std::string>();
    if (!ds.second.IsMap())
      throw InputError(fmt::format("norm_dict {}: '{}' must map variables to {{mean, std}}", path.string(), name));
    auto& vars = d.entries[name];
    for (const auto& v : ds.second) {
      const std::string var = v.first.as<std::string>();
      const std::string where = fmt::format("norm_dict {}: {}.{}", path.string(), name, var);
      if (!v.second.IsMap()) throw InputError(fmt::format("{} must be a map with mean and std", where));
      vars[var] = {number(v.second["mean"], where + ".mean"), number(v.second["std"], where + ".std")};
    }
  }
  return d;
}

NormParams norm_params(const NormDict& dict, const std::string& dataset, const std::vector<std::string>& variables) {
  const std::string file = dict.path.string();
  auto it = dict.entries.find(dataset);
  if (it == dict.entries.end())
    throw InputError(fmt::format("Missing input type '{}' in norm_dict {} (it has: {})", dataset, file, keys_of(dict.entries)));
  NormParams p;
  for (const auto& var : variables) {
    auto v = it->second.find(var);
    if (v == it->second.end())
      throw InputError(fmt::format("Missing variable '{}' for '{}' in norm_dict {}", var, dataset, file));
    auto [mean, std] = v->second;
    if (!std::isfinite(mean) || !std::isfinite(std))
      throw InputError(fmt::format("Non-finite normalisation for variable '{}' of '{}' in norm_dict {} (mean {}, std {})",
                                   var, dataset, file, mean, std));
    if (std == 0.0)
      throw InputError(fmt::format("Zero standard deviation for variable '{}' of '{}' in norm_dict {}", var, dataset, file));
    if (std < 0.0)
      throw InputError(fmt::format("Negative standard deviation ({}) for variable '{}' of '{}' in norm_dict {}", std, var,
                                   dataset, file));
    // A near-constant variable: normalised values of 1e6 and more overflow float32
    // in attention and surface much later as a non-finite loss naming no variable.
    if (std < 1e-6 * std::max(1.0, std::abs(mean)))
      throw InputError(fmt::format("Standard deviation {} for variable '{}' of '{}' in norm_dict {} is too small "
                                   "(below 1e-6 x max(1, |mean {}|)): normalised values would overflow float32",
                                   std, var, dataset, file, mean));
    p.mean.push_back(static_cast<float>(mean));
    p.std.push_back(static_cast<float>(std));
  }
  return p;
}

std::map<std::string, NormParams> norm_params_for(const NormDict& dict,
                                                  const std::map<std::string, std::vector<std::string>>& variables,
                                                  const std::map<std::string, std::string>& input_map) {
  std::map<std::string, NormParams> out;
  for (const auto& [input, vars] : variables) {
    if (input.empty() || input[0] == '_' || input == "EDGE" || input == "parameters" || input == "objects") continue;
    auto m = input_map.find(input);
    out[input] = norm_params(dict, m == input_map.end() ? input : m->second, vars);
  }
  return out;
}

}  // namespace salt::data
