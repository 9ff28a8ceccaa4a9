#include "config/salt_readable.h"

#include "config/data_config.h"
#include "config/yaml_load.h"
#include "config/yaml_util.h"

namespace salt::config {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Lookups through a const node: yaml-cpp's non-const operator[] would add the key.
YAML::Node at(const YAML::Node& node, const char* key) {
  return node && node.IsMap() ? node[key] : YAML::Node(YAML::NodeType::Undefined);
}

std::string scalar_or(const YAML::Node& n, const std::string& fallback = "") {
  return n && n.IsScalar() ? n.Scalar() : fallback;
}

// salt's SaltCLI: norm_config = {norm_dict, variables, global_object, input_map} from data.
void fill_norm_config(YAML::Node& config) {
  const auto data = at(config, "data");
  YAML::Node norm(YAML::NodeType::Map);
  norm["norm_dict"] = copy_tree(data["norm_dict"]);
  norm["variables"] = copy_tree(data["variables"]);
  norm["global_object"] = copy_tree(data["global_object"]);
  norm["input_map"] = at(data, "input_map") ? copy_tree(data["input_map"]) : YAML::Node(YAML::NodeType::Null);
  config["model"]["norm_config"] = norm;
}

// InitNet computes input_size only when the key is absent; fit adds variables and global_object.
void fill_init_nets(YAML::Node& model_args, const YAML::Node& data) {
  auto nets = at(model_args, "init_nets");
  if (!nets || !nets.IsSequence()) return;
  for (auto net : nets) {
    auto dense = at(net, "dense_config");
    if (at(dense, "input_size") && dense["input_size"].IsNull()) dense.remove("input_size");
    if (!at(net, "variables") || net["variables"].IsNull()) net["variables"] = copy_tree(at(data, "variables"));
    if (!at(net, "global_object") || net["global_object"].IsNull())
      net["global_object"] = copy_tree(at(data, "global_object"));
  }
}

// The jet classification task: class names as salt's fit reads them from the file.
void fill_class_names(YAML::Node& model_args, const std::string& global_object,
                      const std::vector<std::string>& flavour_labels) {
  auto tasks = at(at(at(model_args, "tasks"), "init_args"), "modules");
  if (flavour_labels.empty() || !tasks || !tasks.IsSequence()) return;
  for (auto task : tasks) {
    auto args = at(task, "init_args");
    if (!args || scalar_or(at(args, "name")) != global_object + "_classification" ||
        scalar_or(at(args, "label")) != "flavour_label" || (at(args, "class_names") && !args["class_names"].IsNull()))
      continue;
    YAML::Node names(YAML::NodeType::Sequence);
    names.SetStyle(YAML::EmitterStyle::Flow);
    for (const auto& n : flavour_labels) names.push_back(n);
    args["class_names"] = names;
  }
}

void fix_encoder(YAML::Node& model_args) {
  auto encoder = at(model_args, "encoder");
  if (ends_with(scalar_or(at(encoder, "class_path")), "Transformer") && at(encoder, "init_args"))
    encoder["init_args"].remove("depth");  // salt's Transformer passes each layer's depth itself
}

void fix_mask_decoder(YAML::Node& model_args) {
  auto args = at(at(model_args, "mask_decoder"), "init_args");
  if (!at(at(args, "loss_config"), "class_weights")) return;
  if (!at(args, "class_weights") || args["class_weights"].IsNull())
    args["class_weights"] = copy_tree(args["loss_config"]["class_weights"]);
  args["loss_config"].remove("class_weights");
}

// salt-cpp's own data keys, which salt's SaltDataModule does not take: left out
// while at their defaults (set, they stay, and salt refuses them by name).
void drop_salt_cpp_defaults(YAML::Node data) {
  const DataConfig defaults;
  auto drop_if = [&data](const char* key, double value) {
    const auto n = at(data, key);
    double v = 0;
    if (n && n.IsScalar() && YAML::convert<double>::decode(n, v) && v == value) data.remove(key);
  };
  drop_if("warn_input_sigma", defaults.warn_input_sigma);
  drop_if("max_input_sigma", defaults.max_input_sigma);
}

// salt-cpp's own callbacks (salt_cpp.callbacks.*): salt has no such class.
void drop_salt_cpp_callbacks(YAML::Node trainer) {
  const auto callbacks = at(trainer, "callbacks");
  if (!callbacks || !callbacks.IsSequence()) return;
  YAML::Node kept(YAML::NodeType::Sequence);
  for (const auto& c : callbacks)
    if (scalar_or(at(c, "class_path")).rfind("salt_cpp.", 0) != 0) kept.push_back(c);
  if (kept.size() != callbacks.size()) trainer["callbacks"] = kept;
}

}  // namespace

void make_salt_readable(YAML::Node& config, const std::vector<std::string>& flavour_labels) {
  if (!at(config, "model") || !at(config, "data")) return;
  fill_norm_config(config);
  auto model_args = at(at(at(config, "model"), "model"), "init_args");
  if (model_args && model_args.IsMap()) {
    fill_init_nets(model_args, at(config, "data"));
    fill_class_names(model_args, scalar_or(at(at(config, "data"), "global_object"), "jets"), flavour_labels);
    fix_encoder(model_args);
    fix_mask_decoder(model_args);
  }
  drop_salt_cpp_defaults(config["data"]);
  // Fine-tuning is salt-cpp's own: salt would refuse the key. The run's checkpoints
  // keep it (their resolved config), which is where a resume reads it from.
  config.remove("init_from");
  drop_salt_cpp_callbacks(config["trainer"]);
  config["model"].remove("name");  // link targets: salt's config.yaml leaves them out
  config["model"].remove("global_object");
}

YAML::Node model_hparams(const YAML::Node& config) {
  const auto model = get(config, "model");
  if (!model.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  YAML::Node hparams = copy_tree(model);
  // config.yaml drops link targets; ModelWrapper needs them.
  if (!has_key(hparams, "name") && given(get(config, "name"))) hparams["name"] = copy_tree(get(config, "name"));
  const auto global_object = get(get(config, "data"), "global_object");
  if (!has_key(hparams, "global_object") && given(global_object)) hparams["global_object"] = copy_tree(global_object);
  return hparams;
}

}  // namespace salt::config
