// class_dict.yaml from the preprocessing: {dataset: {label: [w0, w1, ...]}}, the
// CrossEntropy class weights of tasks with use_class_dict: true. YAML anchors and
// aliases are resolved by the parser.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace salt::data {

struct ClassDict {
  std::filesystem::path path;
  std::map<std::string, std::map<std::string, std::vector<double>>> weights;  // dataset -> label -> weights
};

ClassDict read_class_dict(const std::filesystem::path& path);

// Weights of `label` under `dataset`; InputError naming label, dataset and file if
// absent (or if a weight is not finite and positive).
std::vector<double> class_weights(const ClassDict& dict, const std::string& dataset, const std::string& label);

}  // namespace salt::data
