#include "deploy/feature_map.h"

namespace salt::deploy {

const std::vector<std::string>& track_selections() {
  static const std::vector<std::string> s = {"all",        "ip3d",           "dipsLoose202102", "r22default",
                                             "r22loose",   "dipsTightUpgrade", "dipsLooseUpgrade"};
  return s;
}

namespace {

std::string without_s(const std::string& s) { return !s.empty() && s.back() == 's' ? s.substr(0, s.size() - 1) : s; }

}  // namespace

std::vector<Feature> default_feature_map(const std::string& selection, const std::vector<std::string>& inputs,
                                         const std::string& global_object) {
  std::vector<Feature> map;
  for (const auto& input : inputs) {
    if (input == global_object) {
      map.push_back({without_s(global_object) + "_var", without_s(global_object) + "_features", "", input, true});
    } else if (input == "global" || input == "parameters" || input.rfind('_', 0) == 0) {
      continue;
    } else if (input.find("tracks") != std::string::npos || input.find("flows") != std::string::npos) {
      const auto base = input.substr(0, input.find('_'));
      map.push_back({base + "_" + selection + "_sd0sort", without_s(base) + "_features", "n_" + base, input, false});
    } else if (input.find("electrons") != std::string::npos) {
      map.push_back({input + "_r22default", without_s(input) + "_features", "n_" + input, input, false});
    } else if (input == "flow") {  // Athena and the TDD disagree on flow/flows
      map.push_back({"flows_" + selection + "_sd0sort", "flow_features", "n_flow", input, false});
    } else {
      map.push_back({input + "_var", without_s(input) + "_features", "n_" + input, input, false});
    }
  }
  // Salt's rule can name two inputs alike (PLIT: global object `electrons` and
  // `electron_tracks` both become electron_features), which no graph can have: the
  // later one keeps its full name.
  for (size_t i = 0; i < map.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (map[i].athena_out == map[j].athena_out) {
        map[i].athena_out = without_s(map[i].salt_name) + "_features";
        map[i].num_name = "n_" + map[i].salt_name;
      }
  return map;
}

}  // namespace salt::deploy
