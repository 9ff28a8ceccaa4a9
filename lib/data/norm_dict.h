// norm_dict.yaml from the preprocessing: {dataset: {variable: {mean, std}}}.
// Keys are dataset names (data.input_map maps input names to them), like salt's InputNorm.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace salt::data {

struct NormParams {
  std::vector<float> mean;  // one per variable, in data.variables order
  std::vector<float> std;
};

struct NormDict {
  std::filesystem::path path;
  // dataset -> variable -> (mean, std), as written in the file (unchecked)
  std::map<std::string, std::map<std::string, std::pair<double, double>>> entries;
};

// Parses the file; InputError if it is missing or not of the expected shape.
NormDict read_norm_dict(const std::filesystem::path& path);

// The parameters of `variables` of `dataset`, checked: missing dataset or variable,
// non-finite mean/std and std == 0 are InputErrors naming the variable and the file.
NormParams norm_params(const NormDict& dict, const std::string& dataset, const std::vector<std::string>& variables);

// For every input of `variables` (input name -> variables), looked up under
// input_map[input] (default: the input name). Inputs whose name starts with '_' and
// salt's non-normalised inputs (EDGE, parameters, objects) are skipped.
std::map<std::string, NormParams> norm_params_for(const NormDict& dict,
                                                  const std::map<std::string, std::vector<std::string>>& variables,
                                                  const std::map<std::string, std::string>& input_map = {});

}  // namespace salt::data
