#include "data/class_dict.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>

#include "core/errors.h"

namespace salt::data {

ClassDict read_class_dict(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(fmt::format("class_dict not found: {}", path.string()));
  YAML::Node root;
  try {
    root = YAML::LoadFile(path.string());
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("Cannot parse class_dict {}: {}", path.string(), e.what()));
  }
  if (!root.IsMap()) throw InputError(fmt::format("class_dict {} must map dataset names to labels", path.string()));
  ClassDict d;
  d.path = path;
  for (const auto& ds : root) {
    const std::string name = ds.first.as<std::string>();
    if (!ds.second.IsMap())
      throw InputError(fmt::format("class_dict {}: '{}' must map labels to lists of weights", path.string(), name));
    for (const auto& l : ds.second) {
      const std::string label = l.first.as<std::string>();
      if (!l.second.IsSequence())
        throw InputError(fmt::format("class_dict {}: {}.{} must be a list of weights", path.string(), name, label));
      std::vector<double> w;
      for (const auto& x : l.second) {
        try {
          w.push_back(x.as<double>());
        } catch (const YAML::Exception&) {
          throw InputError(fmt::format("class_dict {}: {}.{} has a weight that is not a number", path.string(), name, label));
        }
      }
      d.weights[name][label] = std::move(w);
    }
  }
  return d;
}

std::vector<double> class_weights(const ClassDict& dict, const std::string& dataset, const std::string& label) {
  const std::string file = dict.path.string();
  auto ds = dict.weights.find(dataset);
  if (ds == dict.weights.end() || !ds->second.count(label))
    throw InputError(fmt::format(
        "Label '{}' of '{}' not found in class_dict {}; set use_class_dict: false and give the class weights instead",
        label, dataset, file));
  const auto& w = ds->second.at(label);
  for (double x : w)
    if (!std::isfinite(x) || x <= 0)
      throw InputError(fmt::format("Class weight {} for label '{}' of '{}' in class_dict {} must be finite and positive",
                                   x, label, dataset, file));
  return w;
}

}  // namespace salt::data
