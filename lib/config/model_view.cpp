#include "config/model_view.h"

#include "config/bind.h"
#include "config/schema.h"
#include "config/yaml_util.h"

namespace salt::config {
namespace {

// The node at `path` below `node` (Undefined where a key is absent); never adds
// keys. Nodes are rebound with reset(): operator= would write through to the tree.
YAML::Node at_path(const YAML::Node& node, std::initializer_list<const char*> path) {
  YAML::Node at;
  at.reset(node);
  for (const char* key : path) at.reset(get(at, key));
  return at;
}

template <class T>
T given_or(const YAML::Node& n, T fallback) {
  return given(n) ? Codec<T>::decode(n) : fallback;
}

TaskView::Kind task_kind(const std::string& class_path) {
  const auto* spec = components().find(class_path);
  const std::string name = spec ? spec->class_path : class_path;
  if (name == "salt.models.ClassificationTask") return TaskView::Kind::kClassification;
  if (name == "salt.models.RegressionTask" || name == "salt.models.GaussianRegressionTask")
    return TaskView::Kind::kRegression;
  if (name == "salt.models.VertexingTask") return TaskView::Kind::kVertexing;
  return TaskView::Kind::kUnknown;
}

TaskView task_view(const YAML::Node& task) {
  TaskView t;
  t.class_path = class_path_of(task);
  t.kind = task_kind(t.class_path);
  const auto args = get(task, "init_args");
  using Strings = std::vector<std::string>;
  t.input_name = given_or<std::string>(get(args, "input_name"), "");
  t.label = given_or<std::string>(get(args, "label"), "");
  t.sample_weight = given_or<Strings>(get(args, "sample_weight"), {});
  t.targets = given_or<Strings>(get(args, "targets"), {});
  t.target_denominators = given_or<Strings>(get(args, "target_denominators"), {});
  t.class_names = given_or<Strings>(get(args, "class_names"), {});
  const auto out = at_path(args, {"dense_config", "output_size"});
  if (given(out) && out.IsScalar()) t.output_size = Codec<int64_t>::decode(out);
  const auto map = get(args, "label_map");
  if (map.IsMap())
    for (const auto& kv : map) t.label_map.emplace_back(Codec<int64_t>::decode(kv.first), Codec<int64_t>::decode(kv.second));
  return t;
}

}  // namespace

ModelView model_view(const YAML::Node& model_model) {
  ModelView v;
  const auto args = get(model_model, "init_args");
  const auto modules = at_path(args, {"tasks", "init_args", "modules"});
  if (modules.IsSequence())
    for (const auto& task : modules) v.tasks.push_back(task_view(task));
  const auto merges = get(args, "merge_dict");
  if (merges.IsMap())
    for (const auto& kv : merges) v.merge_dict[kv.first.Scalar()] = Codec<std::vector<std::string>>::decode(kv.second);
  const auto objects = at_path(args, {"mask_decoder", "init_args", "num_objects"});
  if (given(objects) && objects.IsScalar()) v.num_objects = Codec<int64_t>::decode(objects);
  return v;
}

}  // namespace salt::config
