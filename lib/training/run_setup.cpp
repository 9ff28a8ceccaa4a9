#include "training/run_setup.h"

#include <spdlog/spdlog.h>

#include "models/mup.h"

#include <fmt/format.h>

#include <random>
#include <thread>

#include "config/bake.h"
#include "config/run_config.h"
#include "config/yaml_load.h"

#include "core/errors.h"
#include "data/h5_file.h"
#include "data/labeller.h"
#include "data/loader.h"
#include "data/virtual_file.h"
#include "models/model_factory.h"

namespace salt::training {
namespace {

// The seed: an int as given; `true` draws one (recorded in the saved config so the
// run can be repeated); `false` also draws one, but like salt leaves it unrecorded.
// Lightning's seed_everything: an int in [0, 2^32 - 1]; `true` is seed 0 (Lightning
// >= 2.2 when $PL_GLOBAL_SEED is unset), recorded in config.yaml; `false` seeds
// nothing, so torch's generator starts from a seed of its own (drawn here, not recorded).
uint64_t resolve_seed(const config::RunConfig& run, YAML::Node config) {
  constexpr int64_t kMaxSeed = 4294967295;
  if (run.seed) {
    if (*run.seed < 0 || *run.seed > kMaxSeed)
      throw UsageError(fmt::format("'seed_everything' {} is out of range: Lightning takes 0 to {}", *run.seed, kMaxSeed));
    return static_cast<uint64_t>(*run.seed);
  }
  if (run.record_drawn_seed) {
    config::bake_seed(config, 0);
    return 0;
  }
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 1) % 4294967295ULL;
}

std::optional<std::vector<std::string>> file_class_names(const data::DataConfig& data, const std::string& file,
                                                         const std::string& input, const std::string& label) {
  if (input != data.global_object || file.empty()) return std::nullopt;
  auto h5 = data::h5::File::open_read(input_file(data, file));
  const auto dataset = data.dataset_of(input);
  // Said here, or the user would only hear that class_names are unknown.
  if (!h5.has_dataset(dataset))
    throw InputError(file + ": no dataset '" + dataset + "' (the jets, data.global_object)");
  auto attrs = h5.dataset(dataset).attributes();
  auto names = attrs[label];
  if (!names || !names.IsSequence()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(n.as<std::string>());
  return out;
}

// data.labeller_config's classes (empty: no relabelling); checked against ftag's
// flavours here, before the model is built on them.
std::vector<std::string> labeller_classes(const data::DataConfig& data) {
  const auto& l = data.labeller_config;
  if (!l.use_labeller) return {};
  data::Labeller check(l.class_names.value_or(std::vector<std::string>{}), l.require_labels);
  return check.class_names();
}

// input -> sample_weight field -> its config key, for the readers' messages.
std::map<std::string, std::map<std::string, std::string>> sample_weight_keys(const models::SaltModelImpl& model) {
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& task : model.task_list())
    if (task->sample_weight()) out[task->input_name()].emplace(*task->sample_weight(), task->sample_weight_key());
  return out;
}

// MaskFormer's object classes: a raw class value none of them lists is taken as the
// null class; the reader names the first such value of each file.
std::vector<data::ReaderOptions::LabelValues> object_class_values(const data::DataConfig& d) {
  if (!d.mf_config || !d.mf_config->object.class_label || d.mf_config->object.object_classes.empty()) return {};
  const auto& o = d.mf_config->object;
  data::ReaderOptions::LabelValues v;
  v.input = "objects";
  v.label = *o.class_label;
  v.listed_in = "data.mf_config.object.object_classes";
  v.consequence = "such objects are taken as the null class '" + o.object_classes.back().name + "'";
  v.unless_label = o.id_label;
  for (const auto& c : o.object_classes) v.values.insert(v.values.end(), c.raw.begin(), c.raw.end());
  return {v};
}

void bake_into_config(RunSetup& s) {
  // Class weights of use_class_dict tasks, so config.yaml says what was trained with.
  config::bake_class_weights(s.config, [&s](const std::string& input, const std::string& label) {
    std::optional<std::vector<double>> out;
    if (!s.class_dict) return out;
    auto w = data::class_weights(*s.class_dict, s.run.data.dataset_of(input), label);
    out.emplace(w.begin(), w.end());
    return out;
  });
  config::bake_variables(s.config, s.run.data);
}

// What no stage can run without: the inputs' variables, a loader's threads.
void check_data_settings(const data::DataConfig& d) {
  if (d.variables.empty())
    throw UsageError("'data.variables' is empty: the model config must list its input variables");
  if (!d.variables.count(d.global_object))
    throw UsageError("'data.variables' has no '" + d.global_object + "' (data.global_object)");
  if (d.num_workers > data::kMaxLoaderWorkers)
    throw UsageError(
        fmt::format("data.num_workers {} is more loader threads than salt-cpp starts ({}; this machine has "
                    "{} cores, and a worker per core is plenty)",
                    d.num_workers, data::kMaxLoaderWorkers, std::thread::hardware_concurrency()));
}

// What the model's builders read beyond the model's config: variables, norm,
// class weights and names (from `model_file`, or the labeller's), loss mode.
// The functions hold references to `s` and `model_file`: used while both live.
models::ModelContext model_context(const RunSetup& s, const std::map<std::string, data::NormParams>& norm,
                                  const std::string& model_file, const std::vector<std::string>& relabelled) {
  const auto& d = s.run.data;
  models::ModelContext ctx;
  ctx.variables = d.variables;
  ctx.global_object = d.global_object;
  for (const auto& [input, params] : norm) ctx.norm[input] = models::NormStats{params.mean, params.std};
  ctx.class_weights = [&s, &d](const std::string& input,
                               const std::string& label) -> std::optional<std::vector<float>> {
    if (!s.class_dict) return std::nullopt;
    auto w = data::class_weights(*s.class_dict, d.dataset_of(input), label);
    return std::vector<float>(w.begin(), w.end());
  };
  ctx.class_names = [&d, &model_file, relabelled](const std::string& input, const std::string& label) {
    // With the labeller, flavour_label's classes are the labeller's, not the file's.
    if (!relabelled.empty() && input == d.global_object && label == "flavour_label")
      return std::optional<std::vector<std::string>>(relabelled);
    return file_class_names(d, model_file, input, label);
  };
  ctx.loss_mode = s.run.model.loss_mode;
  ctx.mf_config = d.mf_config;
  ctx.edge_constructors = d.edge_constructors;
  ctx.name = s.run.name;
  return ctx;
}

// The readers read what the model needs (its labels, the config's extra ones) as
// data.* says.
void set_reader_options(RunSetup& s, const std::map<std::string, data::NormParams>& norm,
                        const std::vector<std::string>& relabelled) {
  const auto& d = s.run.data;
  auto labels = s.model->required_labels();
  for (const auto& [input, extra] : d.labels)
    for (const auto& l : extra) {
      auto& list = labels[input];
      if (std::find(list.begin(), list.end(), l) == list.end()) list.push_back(l);
    }
  s.reader_options.set_variables(d.variables)
      .set_labels(labels)
      .set_input_map(d.input_map)
      .set_num_inputs(d.num_inputs)
      .set_selections(d.selections)
      .set_multi_targets(d.multi_target)
      .set_parameters(d.parameters, static_cast<uint64_t>(s.seed))
      .set_noise(d.noise)
      .set_sample_weights(sample_weight_keys(*s.model->model))
      .set_labeller(relabelled, d.labeller_config.require_labels)
      .set_global_object(d.global_object)
      .set_non_finite_to_num(d.non_finite_to_num)
      .set_ignore_finite_checks(d.ignore_finite_checks)
      .set_plausibility(norm, d.warn_input_sigma, d.max_input_sigma)
      .set_label_values(object_class_values(d));
  for (const auto& n : d.noise)
    if (n.mean == 0)
      spdlog::warn("data.transforms: GaussianNoise multiplies {}.{} by N(0, {}), as salt's code does, so its values "
                   "shrink towards 0; mean 1 adds noise around the value",
                   n.input, n.variable, n.std);
}

}  // namespace

void seed_everything(uint64_t seed) { torch::manual_seed(seed); }

RunSetup prepare_run(const config::ResolvedConfig& resolved, Stage stage) {
  RunSetup s;
  s.run = resolved.run;
  s.config = config::copy_tree(resolved.config);
  const auto& run = s.run;
  const auto& d = s.run.data;
  check_data_settings(d);
  s.seed = resolve_seed(run, s.config);

  const auto& model_file = stage == Stage::kFit ? d.train_file : d.test_file;
  if (model_file.empty()) throw UsageError("'data.test_file' is not set: salt test needs a file to evaluate");

  s.norm_dict = data::read_norm_dict(d.norm_dict);
  const auto norm = data::norm_params_for(s.norm_dict, d.variables, d.input_map);
  if (!d.class_dict.empty()) s.class_dict = data::read_class_dict(d.class_dict);
  const auto relabelled = labeller_classes(d);
  const auto ctx = model_context(s, norm, model_file, relabelled);

  seed_everything(s.seed);  // weight initialisation draws from it
  // trainer.deterministic: LibTorch's deterministic algorithms (bitwise-repeatable
  // GPU runs; an op without a deterministic kernel then fails with LibTorch's error).
  // "warn" only warns about such ops, as in Lightning.
  if (s.run.trainer.deterministic) {
    at::globalContext().setDeterministicAlgorithms(true, s.run.trainer.deterministic_warn_only);
  }
  s.model = models::build_model(run.model.model, ctx);
  if (run.model.mup_config) {
    if (run.model.optimizer != "AdamW")
      throw UsageError("model.mup_config: muP needs model.optimizer AdamW (salt's MuAdamW), not " +
                       run.model.optimizer);
    const auto file = config::mup_shapes_file(*run.model.mup_config);
    models::apply_base_shapes(*s.model, models::read_base_shapes(file), file.string());
  }

  set_reader_options(s, norm, relabelled);
  bake_into_config(s);
  return s;
}

std::string input_file(const data::DataConfig& data, const std::string& file) {
  if (!data::has_wildcard(file)) return file;
  const std::string& vds = file == data.train_file ? data.train_vds_path
                           : file == data.val_file ? data.val_vds_path
                           : file == data.test_file ? data.test_vds_path
                                                    : std::string();
  return data::build_virtual_file(file, vds.empty() ? data::default_virtual_path(file) : std::filesystem::path(vds))
      .string();
}

std::shared_ptr<data::H5Reader> open_reader(const RunSetup& setup, const std::string& path, int64_t num,
                                            const std::string& num_key, bool test_stage) {
  auto options = setup.reader_options;
  options.set_test_stage(test_stage);
  return std::make_shared<data::H5Reader>(input_file(setup.run.data, path), std::move(options), num, num_key);
}

void refuse_empty(const data::H5Reader& reader, const std::string& path, int64_t num, const std::string& num_key,
                  const std::string& consequence) {
  if (reader.num_rows() > 0) return;
  if (num == 0)
    throw UsageError("data." + num_key + " is 0: " + consequence + " (give a positive count, or -1 for all)");
  throw InputError(path + " holds no jets: " + consequence);
}

}  // namespace salt::training
