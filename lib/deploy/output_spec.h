// salt to_onnx's output rewrites, parsed as salt parses them:
//   --combine_outputs light,0.5*q,g   -> {model}_plight = 0.5 {model}_pq + {model}_pg ... (names as given)
//   --rename old:new                  -> {model}_old is written as {model}_new
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace salt::deploy {

struct Combination {
  std::string output;                               // the new output's name (without the model prefix)
  std::vector<std::pair<double, std::string>> terms;  // (scale, existing output name)
};

// UsageError naming the flag and the expression when malformed (no terms, an
// empty name, a scale that is not a finite number).
Combination parse_combination(const std::string& expr);
std::pair<std::string, std::string> parse_rename(const std::string& expr);

// Output names after renames and combinations (salt's ONNXModel.output_names for
// the jet-level part): renames replace in place, combinations are appended.
// UsageError for a rename or term naming no output, or a name used twice.
std::vector<std::string> rewrite_output_names(const std::vector<std::string>& outputs, const std::string& model_name,
                                              const std::vector<std::pair<std::string, std::string>>& renames,
                                              const std::vector<Combination>& combinations);

}  // namespace salt::deploy
