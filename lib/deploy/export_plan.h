// What an export produced, for the check and the metadata: the feature map and,
// per graph output, where its value comes from in salt-cpp's own predictions.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "deploy/feature_map.h"
#include "deploy/output_spec.h"

namespace salt::deploy {

struct PlannedOutput {
  std::string name;          // graph output name (after renames)
  std::string task;          // source task ("" for a combination)
  int64_t column = 0;        // column of the task's prediction columns (jet level)
  bool per_constituent = false;  // int8 [n]: argmax class or vertex index of `constituent_input`
  bool object = false;  // MaskFormer: the leading object's target `column`, or (per_constituent) each one's object
  std::string constituent_input;
  Combination combination;   // when task is empty: terms name other outputs (without the prefix)
};

struct ExportPlan {
  std::string model_name;
  std::string global_object;
  std::vector<Feature> features;
  std::vector<PlannedOutput> outputs;  // in graph order
  std::vector<std::pair<std::string, double>> parameters;  // constants of the graph, in variables order
};

}  // namespace salt::deploy
