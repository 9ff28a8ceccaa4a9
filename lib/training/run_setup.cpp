#include "training/run_setup.h"

#include <random>

#include "config/yaml_load.h"
#include "core/errors.h"
#include "data/h5_file.h"
#include "models/model_factory.h"

namespace salt::training {
namespace {

// The seed: an int as given; `true` draws one (recorded in the saved config so the
// run can be repeated); `false` also draws one, but like salt leaves it unrecorded.
uint64_t resolve_seed(YAML::Node config) {
  const auto node = config["seed_everything"];
  const auto& text = node.Scalar();
  if (text == "true" || text == "false") {
    std::random_device rd;
    uint64_t seed = (static_cast<uint64_t>(rd()) << 1) % 4294967295ULL;
    if (text == "true") config["seed_everything"] = seed;
    return seed;
  }
  auto value = node.as<int64_t>();
  if (value < 0) throw UsageError("'seed_everything' must not be negative");
  return static_cast<uint64_t>(value);
}

std::optional<std::vector<std::string>> file_class_names(const data::DataConfig& data, const std::string& file,
                                                         const std::string& input, const std::string& label) {
  if (input != data.global_object || file.empty()) return std::nullopt;
  auto h5 = data::h5::File::open_read(file);
  const auto dataset = data.dataset_of(input);
  // Said here, or the user would only hear that class_names are unknown.
  if (!h5.has_dataset(dataset)) throw InputError(file + ": no dataset '" + dataset + "' (the jets, data.global_object)");
  auto attrs = h5.dataset(dataset).attributes();
  auto names = attrs[label];
  if (!names || !names.IsSequence()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(n.as<std::string>());
  return out;
}

YAML::Node task_nodes(YAML::Node config) {
  return config["model"]["model"]["init_args"]["tasks"]["init_args"]["modules"];
}

void bake_into_config(RunSetup& s) {
  YAML::Node config = s.config;
  // Class weights of use_class_dict tasks, so config.yaml says what was trained with.
  for (auto task : task_nodes(config)) {
    auto args = task["init_args"];
    if (!args["use_class_dict"] || !args["use_class_dict"].as<bool>()) continue;
    auto loss_args = args["loss"]["init_args"];
    if (!loss_args["weight"] || !loss_args["weight"].IsNull()) continue;
    if (!s.class_dict) continue;
    auto weights = data::class_weights(*s.class_dict, s.data.dataset_of(args["input_name"].as<std::string>()),
                                       args["label"].as<std::string>());
    YAML::Node list(YAML::NodeType::Sequence);
    for (double w : weights) list.push_back(w);
    list.SetStyle(YAML::EmitterStyle::Flow);
    loss_args["weight"] = list;
  }
  // As salt's CLI does: init nets know the variables and the global object.
  YAML::Node variables(YAML::NodeType::Map);
  for (const auto& [input, vars] : s.data.variables) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& v : vars) list.push_back(v);
    variables[input] = list;
  }
  for (auto net : config["model"]["model"]["init_args"]["init_nets"]) {
    net["variables"] = config::copy_tree(variables);
    net["global_object"] = s.data.global_object;
  }
  YAML::Node norm_config(YAML::NodeType::Map);
  norm_config["norm_dict"] = s.data.norm_dict;
  norm_config["variables"] = config::copy_tree(variables);
  norm_config["global_object"] = s.data.global_object;
  if (!config["data"]["input_map"].IsNull()) norm_config["input_map"] = config::copy_tree(config["data"]["input_map"]);
  config["model"]["norm_config"] = norm_config;
}

}  // namespace

void seed_everything(uint64_t seed) { torch::manual_seed(seed); }

LrsConfig lrs_config_from_yaml(const YAML::Node& l) {
  LrsConfig lrs;
  lrs.initial = l["initial"].as<double>();
  lrs.max = l["max"].as<double>();
  lrs.end = l["end"].as<double>();
  lrs.pct_start = l["pct_start"].as<double>();
  lrs.weight_decay = l["weight_decay"].as<double>();
  lrs.last_epoch = l["last_epoch"].as<int64_t>();
  return lrs;
}

RunSetup prepare_run(const YAML::Node& resolved, Stage stage) {
  RunSetup s;
  s.config = config::copy_tree(resolved);
  s.trainer = trainer_config_from_yaml(s.config);
  s.data = data::data_config_from_yaml(s.config["data"]);
  if (s.data.variables.empty()) throw UsageError("'data.variables' is empty: the model config must list its input variables");
  if (!s.data.variables.count(s.data.global_object))
    throw UsageError("'data.variables' has no '" + s.data.global_object + "' (data.global_object)");
  s.seed = resolve_seed(s.config);
  s.name = s.config["name"].as<std::string>();
  if (!s.config["log_suffix"].IsNull()) s.log_suffix = s.config["log_suffix"].as<std::string>();
  if (!s.config["ckpt_path"].IsNull()) s.ckpt_path = s.config["ckpt_path"].as<std::string>();
  s.overwrite_config = s.config["overwrite_config"].as<bool>();
  s.lrs = lrs_config_from_yaml(s.config["model"]["lrs_config"]);

  const auto& model_file = stage == Stage::kFit ? s.data.train_file : s.data.test_file;
  if (model_file.empty()) throw UsageError("'data.test_file' is not set: salt test needs a file to evaluate");

  s.norm_dict = data::read_norm_dict(s.data.norm_dict);
  models::ModelContext ctx;
  ctx.variables = s.data.variables;
  ctx.global_object = s.data.global_object;
  for (const auto& [input, params] : data::norm_params_for(s.norm_dict, s.data.variables, s.data.input_map))
    ctx.norm[input] = models::NormStats{params.mean, params.std};
  if (!s.data.class_dict.empty()) s.class_dict = data::read_class_dict(s.data.class_dict);
  ctx.class_weights = [&s](const std::string& input, const std::string& label) -> std::optional<std::vector<float>> {
    if (!s.class_dict) return std::nullopt;
    auto w = data::class_weights(*s.class_dict, s.data.dataset_of(input), label);
    return std::vector<float>(w.begin(), w.end());
  };
  ctx.class_names = [&s, &model_file](const std::string& input, const std::string& label) {
    return file_class_names(s.data, model_file, input, label);
  };
  ctx.loss_mode = s.config["model"]["loss_mode"].as<std::string>();
  ctx.name = s.name;

  seed_everything(s.seed);  // weight initialisation draws from it
  // trainer.deterministic: LibTorch's deterministic algorithms (bitwise-repeatable
  // GPU runs; an op without a deterministic kernel then fails with LibTorch's error).
  // "warn" only warns about such ops, as in Lightning.
  if (s.trainer.deterministic) {
    const bool warn_only = s.config["trainer"]["deterministic"].Scalar() == "warn";
    at::globalContext().setDeterministicAlgorithms(true, warn_only);
  }
  s.model = models::build_model(s.config["model"]["model"], ctx);

  auto labels = s.model->required_labels();
  if (auto extra = s.config["data"]["labels"]; extra && extra.IsMap())
    for (const auto& kv : extra)
      for (const auto& l : kv.second) {
        auto& list = labels[kv.first.as<std::string>()];
        if (std::find(list.begin(), list.end(), l.as<std::string>()) == list.end()) list.push_back(l.as<std::string>());
      }
  s.reader_options.set_variables(s.data.variables)
      .set_labels(labels)
      .set_input_map(s.data.input_map)
      .set_num_inputs(s.data.num_inputs)
      .set_global_object(s.data.global_object)
      .set_non_finite_to_num(s.data.non_finite_to_num)
      .set_ignore_finite_checks(s.data.ignore_finite_checks);
  bake_into_config(s);
  return s;
}

std::shared_ptr<data::H5Reader> open_reader(const RunSetup& setup, const std::string& path, int64_t num,
                                            const std::string& num_key) {
  return std::make_shared<data::H5Reader>(path, setup.reader_options, num, num_key);
}

}  // namespace salt::training
