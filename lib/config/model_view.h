// A typed view of what a model (the validated model.model component) reads from
// the data, for code that needs the labels but not the modules (salt toydata):
// each task's kind, input and label variables, the merged inputs, MaskFormer's
// object slots. The tasks' own bindings (lib/models) build the modules; this view
// reads the same keys, so nothing outside lib/config reads model.model by key.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace salt::config {

struct TaskView {
  // By the task's class (its registered class path, an alias resolved): salt.models.
  // ClassificationTask, RegressionTask or GaussianRegressionTask, VertexingTask.
  enum class Kind { kClassification, kRegression, kVertexing, kUnknown };
  Kind kind = Kind::kUnknown;
  std::string class_path;  // as written
  std::string input_name, label;
  std::vector<std::string> sample_weight, targets, target_denominators, class_names;
  std::optional<int64_t> output_size;                   // dense_config.output_size
  std::vector<std::pair<int64_t, int64_t>> label_map;  // raw value -> class, in the config's order
};

struct ModelView {
  std::vector<TaskView> tasks;                                 // tasks.init_args.modules, in order
  std::map<std::string, std::vector<std::string>> merge_dict;  // merged input -> its member inputs
  std::optional<int64_t> num_objects;                          // mask_decoder.init_args.num_objects
};

// The view of `model_model` (validated, or a partial mapping as tests write it:
// absent keys stay empty).
ModelView model_view(const YAML::Node& model_model);

}  // namespace salt::config
