#include "config/data_config.h"

#include <algorithm>
#include <cmath>

#include "config/yaml_util.h"
#include "core/errors.h"

namespace salt::config {
namespace {

using D = DataConfig;

void read_variables(D& c, const YAML::Node& vars) {
  c.variables.clear();
  c.input_order.clear();
  if (!vars.IsMap()) return;
  for (const auto& kv : vars) {
    const auto input = kv.first.Scalar();
    // salt's CLI adds the edge features here (config.yaml of a salt GN2XE run);
    // they are computed from data.edge_constructors, not read from the file.
    if (input.rfind(edge_input_name(""), 0) == 0) continue;
    c.variables[input] = given(kv.second) ? Codec<std::vector<std::string>>::decode(kv.second) : std::vector<std::string>{};
    c.input_order.push_back(input);
  }
}

void read_input_map(D& c, const YAML::Node& m) {
  if (!m.IsMap()) return;
  for (const auto& kv : m) {
    const auto k = kv.first.Scalar();
    if (!k.empty() && k[0] == '_') continue;  // salt ignores keys starting with '_'
    c.input_map[k] = kv.second.Scalar();
  }
}

// salt maps "global" (and "parameters") to the global object's dataset; every
// other input without an entry reads the dataset of its own name.
void complete_input_map(D& c) {
  for (const char* g : {"global", "parameters"})
    if (c.input_map.count(g)) c.input_map[g] = c.global_object;
  for (const auto& in : c.input_order)
    if (!c.input_map.count(in)) c.input_map[in] = in == "global" || in == "parameters" ? c.global_object : in;
  if (c.mf_config) c.input_map["objects"] = c.mf_config->object.name;  // as salt's SaltDataset
}

const Binding<ParameterSpec>& parameter_binding() {
  static const Binding<ParameterSpec> b = [] {
    Binding<ParameterSpec> p{ParameterSpec{}};
    p.required("train", SALT_FIELD(train), "Values of this parameter in the training set.")
        .required("test", SALT_FIELD(test), "Value every jet gets in salt test.")
        .arg("prob", SALT_FIELD(prob), "Probability of each train value for jets with another value (default uniform).");
    return p;
  }();
  return b;
}

// salt.data.transforms.GaussianNoise's noise_params: salt's code reads
// {input_type: [{variable, mean, std}]}, salt's docs show [{input_type, variable,
// mean, std}]; both are read.
const Binding<NoiseSpec>& noise_binding() {
  static const auto b =
      Binding<NoiseSpec>({})
          .arg("input_type", SALT_FIELD(input), "The input (jets, tracks, ...), in the list form.")
          .required("variable", SALT_FIELD(variable), "A variable of that input in data.variables.")
          .required("mean", SALT_FIELD(mean), "Mean of the factor: the value becomes value x N(mean, std).")
          .required("std", SALT_FIELD(std), "Standard deviation of the factor.", at_least(t_float(), 0));
  return b;
}

Field noise_params_field() {
  auto f = field_null("noise_params",
                      t_optional(t_union({t_dict(t_list(noise_binding().type())), t_list(noise_binding().type())})),
                      "{input_type: [{variable, mean, std}]} (salt's code) or [{input_type, variable, mean, std}] "
                      "(salt's docs).");
  f.note = "read by data.transforms' reader (read_transforms) into DataConfig::noise";
  return f;
}

const bool kGaussianNoise = register_component(
    {"salt.data.transforms.GaussianNoise", "transform", t_struct({noise_params_field()}),
     "Multiplies input variables by Gaussian noise N(mean, std) as they are read (salt's input augmentation)."});

void read_transforms(D& c, const YAML::Node& list) {
  c.noise.clear();
  if (!given(list)) return;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto params = list[i]["init_args"]["noise_params"];
    if (!given(params)) continue;
    const auto key = "data.transforms." + std::to_string(i) + ".init_args.noise_params";
    if (params.IsMap()) {
      for (const auto& kv : params)
        for (const auto& entry : kv.second) {
          auto spec = noise_binding().read(entry);
          spec.input = kv.first.Scalar();
          c.noise.push_back(std::move(spec));
        }
      continue;
    }
    for (std::size_t j = 0; j < params.size(); ++j) {
      auto spec = noise_binding().read(params[j]);
      if (spec.input.empty()) throw UsageError(key + "." + std::to_string(j) + ": give input_type (jets, tracks, ...)");
      c.noise.push_back(std::move(spec));
    }
  }
}

// Each noisy variable must be read: an input of data.variables and one of its variables.
void check_transforms(D& c) {
  for (const auto& n : c.noise) {
    const auto it = c.variables.find(n.input);
    if (it == c.variables.end())
      throw UsageError("data.transforms: GaussianNoise input_type '" + n.input + "' is not an input of data.variables");
    if (std::find(it->second.begin(), it->second.end(), n.variable) == it->second.end())
      throw UsageError("data.transforms: GaussianNoise variable '" + n.variable + "' is not one of data.variables." +
                       n.input);
  }
}

void read_parameters(D& c, const YAML::Node& map) {
  c.parameters.clear();
  if (!given(map)) return;
  for (const auto& kv : map) {  // in the file's order, which must be variables.parameters'
    auto spec = parameter_binding().read(kv.second);
    spec.name = kv.first.Scalar();
    const std::string key = "data.parameters." + spec.name;
    if (spec.train.empty()) throw UsageError(key + ".train: give at least one value");
    if (spec.prob) {
      double sum = 0;
      for (double q : *spec.prob) sum += q;
      if (spec.prob->size() != spec.train.size() || std::abs(sum - 1.0) > 1e-6 ||
          std::any_of(spec.prob->begin(), spec.prob->end(), [](double q) { return !(q >= 0); }))
        throw UsageError(key + ".prob: needs one non-negative probability per train value, summing to 1");
    }
    c.parameters.push_back(std::move(spec));
  }
}

// salt asserts that data.parameters lists the parameters variables, in order.
void check_parameters(D& c) {
  auto it = c.variables.find("parameters");
  std::vector<std::string> names;
  for (const auto& p : c.parameters) names.push_back(p.name);
  const std::vector<std::string> vars = it == c.variables.end() ? std::vector<std::string>{} : it->second;
  if (names != vars) {
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
      return "[" + s + "]";
    };
    throw UsageError("data.parameters: " + join(names) + " must name the variables of data.variables.parameters " +
                     join(vars) + ", in the same order");
  }
}

const Binding<LabellerConfig>& labeller_binding() {
  static const Binding<LabellerConfig> b = [] {
    Binding<LabellerConfig> l{LabellerConfig{}};
    l.required("use_labeller", SALT_FIELD(use_labeller), "Relabel (false: keep the file's flavour_label).")
        .arg("class_names", SALT_FIELD(class_names), "ftag flavour names, in label order, e.g. [hbb, hcc, top, qcd].")
        .arg("require_labels", SALT_FIELD(require_labels), "A jet matching none of the classes is an error (false: ignored).")
        .finally([](LabellerConfig& c) {
          // salt's LabellerConfig drops the other settings when the labeller is off.
          if (!c.use_labeller) c = LabellerConfig{};
        });
    return l;
  }();
  return b;
}

const Binding<MultiTarget>& multi_target_binding() {
  static const Binding<MultiTarget> b = [] {
    Binding<MultiTarget> m{MultiTarget{}};
    m.required("input_name", SALT_FIELD(input_name), "Input whose labels are replaced, e.g. jets.")
        .required("sel_label", SALT_FIELD(sel_label), "Label compared with `value`.")
        .required("opp", SALT_FIELD(opp), "Comparison.", t_choice({"==", "!=", ">=", "<=", ">", "<"}))
        .required("value", SALT_FIELD(value), "Right-hand side of the comparison.")
        .required("source", SALT_FIELD(source), "Label whose value is taken where the comparison holds.")
        .arg("target", SALT_FIELD(target), "Existing label to replace (or custom_target).")
        .arg("custom_target", SALT_FIELD(custom_target), "New label to create (NaN where no entry applies).");
    return m;
  }();
  return b;
}

// salt refuses an entry with both or neither of target and custom_target.
void read_multi_target(D& c, const YAML::Node& list) {
  c.multi_target.clear();
  if (!given(list)) return;
  for (size_t i = 0; i < list.size(); ++i) {
    auto entry = multi_target_binding().read(list[i]);
    if (entry.target.has_value() == entry.custom_target.has_value())
      throw UsageError("data.multi_target[" + std::to_string(i) + "]: give exactly one of 'target' (replace a label) " +
                       "and 'custom_target' (create one)");
    c.multi_target.push_back(std::move(entry));
  }
}

Binding<D> make_data_binding() {
  Binding<D> b{D{}};
  b.custom(field_node("variables", t_dict(t_list(t_str())), YAML::Node(YAML::NodeType::Map),
                      "Input variables per input type, e.g. {jets: [pt_btagJes, ...], tracks: [d0, ...]}; "
                      "their order is the model's column order."),
           read_variables)
      .arg("global_object", SALT_FIELD(global_object), "The global object (one per row) that other inputs belong to.")
      .required("train_file", SALT_FIELD(train_file),
                "Training HDF5 file from the preprocessing; a wildcard in the name (pp_train_*.h5) reads every "
                "match, in name order, through an HDF5 virtual dataset.", t_path())
      .required("val_file", SALT_FIELD(val_file), "Validation HDF5 file (wildcards as train_file).", t_path())
      .custom(field_null("test_file", t_optional(t_path()), "Test HDF5 file for `salt test`."), unless_null<D>(SALT_FIELD(test_file)))
      .required("norm_dict", SALT_FIELD(norm_dict), "norm_dict.yaml: {input: {variable: {mean, std}}}.", t_path())
      .custom(field_null("class_dict", t_optional(t_path()), "class_dict.yaml: class weights for tasks with use_class_dict."),
              unless_null<D>(SALT_FIELD(class_dict)))
      .custom(field_null("input_map", t_optional(t_dict(t_str())), "Input name -> HDF5 dataset name (null: identical)."),
              read_input_map)
      .custom(field_null("num_inputs", t_optional(t_dict(t_int())), "Keep only the first N constituents, e.g. {tracks: 10}."),
              unless_null<D>(SALT_FIELD(num_inputs)))
      .required("batch_size", SALT_FIELD(batch_size), "Jets per batch (per process).", at_least(t_int(), 1))
      .required("num_workers", SALT_FIELD(num_workers), "Loader threads decoding batches ahead (0: load in the training thread).",
                at_least(t_int(), 0))
      .arg("num_train", SALT_FIELD(num_train), "Use the first N training jets (-1: all).", at_least(t_int(), -1))
      .arg("num_val", SALT_FIELD(num_val), "Use the first N validation jets (-1: all).", at_least(t_int(), -1))
      .arg("num_test", SALT_FIELD(num_test), "Use the first N test jets (-1: all).", at_least(t_int(), -1))
      .arg("move_files_temp", SALT_FIELD(move_files_temp),
           "Copy train/val files into this directory (e.g. /dev/shm/<user>/salt) for the run.", t_optional(t_path()))
      .arg("test_suff", SALT_FIELD(test_suff), "Suffix for the prediction file name.")
      .arg("pin_memory", SALT_FIELD(pin_memory), "Pin host memory of batches when training on a GPU.")
      .arg("persistent_workers", SALT_FIELD(persistent_workers), "Keep loader threads alive between epochs.")
      .arg("prefetch_factor", SALT_FIELD(prefetch_factor), "Batches each loader thread decodes ahead.", at_least(t_int(), 1))
      .unbound(field_null("multiprocessing_context", t_optional(t_str()), "Python multiprocessing start method."))
      .ignored("salt-cpp loads with threads, not processes")
      .arg("non_finite_to_num", SALT_FIELD(non_finite_to_num), "Replace NaN/inf inputs by finite numbers instead of failing.")
      .arg("ignore_finite_checks", SALT_FIELD(ignore_finite_checks), "Skip the check for non-finite inputs.")
      .arg("warn_input_sigma", SALT_FIELD(warn_input_sigma),
           "salt-cpp: warn (once per input, naming file, dataset and row) about a value this many norm-dict "
           "standard deviations from its mean: a sign of a damaged chunk, which LZF has no checksum to catch "
           "(0: off).",
           at_least(t_float(), 0))
      .arg("max_input_sigma", SALT_FIELD(max_input_sigma),
           "salt-cpp: stop with an error at a value this many norm-dict standard deviations from its mean (0: off).",
           at_least(t_float(), 0))
      .custom(field_null("labels", t_optional(t_dict(t_list(t_str()))), "Extra label variables to load per input type."),
              unless_null<D>(SALT_FIELD(labels)))
      .optional_struct("labeller_config", SALT_FIELD(labeller_config), labeller_binding(),
                       "{use_labeller, class_names: [ftag flavours, e.g. hbb], require_labels: true}: derive the "
                       "global object's flavour_label from truth variables by ftag's flavour cuts.")
      .custom(field_null("mf_config", t_optional(mf_config_binding().type()),
                         "MaskFormer: {object: {name, id_label, class_label, object_classes}, constituent: {name, "
                         "id_label}}; the objects are read as the input 'objects'."),
              [](D& c, const YAML::Node& n) {
                if (n.IsDefined() && n.IsMap()) c.mf_config = mf_config_binding().read(n);
              })
      .custom(field_null("selections", t_optional(t_dict(t_list(t_str()))),
                         "Cuts per constituent input, e.g. {tracks: [d0 < 3.5, NSHARED < 1.1]}; a constituent failing "
                         "any cut is masked out (ftag's TrackSelector)."),
              unless_null<D>(SALT_FIELD(selections)))
      .custom(field_null("parameters", t_optional(t_dict(parameter_binding().type())),
                         "Parameterised networks: {variable: {train: [values], test: value, prob: [...]}} for each "
                         "variable of data.variables.parameters, in order."),
              read_parameters)
      .custom(field_null("transforms", t_optional(t_list(t_component("transform"))),
                         "Input augmentation as the inputs are read (training, validation and test, as salt): "
                         "salt.data.transforms.GaussianNoise."),
              read_transforms)
      .unbound(field("recover_malformed", t_bool(), false, "Recover malformed files.")).ignored("not needed by the C++ reader")
      .custom(field_null("train_vds_path", t_optional(t_path()),
                         "With a wildcard in train_file: the virtual dataset file written over the matches "
                         "(null: <dir>/<pattern with * -> vds, no .h5>/vds.h5)."),
              unless_null<D>(SALT_FIELD(train_vds_path)))
      .custom(field_null("val_vds_path", t_optional(t_path()), "As train_vds_path, for a wildcard in val_file."),
              unless_null<D>(SALT_FIELD(val_vds_path)))
      .custom(field_null("test_vds_path", t_optional(t_path()), "As train_vds_path, for a wildcard in test_file."),
              unless_null<D>(SALT_FIELD(test_vds_path)))
      .unbound(field_null("config_s3", t_any(), "S3 storage config.")).unsupported("read files from a file system")
      .custom(field_null("edge_constructors", t_optional(t_list(edge_constructor_binding().type())),
                         "Edge features between the constituents of one input (GN2XE): [{input_name, edge_features}]; "
                         "the model reads them as the input _edge_features_<input_name> (edge_init_nets)."),
              [](D& c, const YAML::Node& list) {
                c.edge_constructors.clear();
                if (given(list))
                  for (const auto& e : list) c.edge_constructors.push_back(edge_constructor_binding().read(e));
              })
      .custom(field_null("multi_target", t_optional(t_list(multi_target_binding().type())),
                         "Conditional targets: [{input_name, sel_label, opp, value, source, target | custom_target}]; "
                         "where `sel_label opp value`, the target label takes the `source` label's value."),
              read_multi_target)
      .finally(complete_input_map)
      .finally(check_parameters)
      .finally([](D& c) { check_edge_constructors(c.edge_constructors, c.variables); })
      .finally(check_transforms);
  return b;
}

}  // namespace

std::string DataConfig::dataset_of(const std::string& input) const {
  auto it = input_map.find(input);
  return it == input_map.end() ? input : it->second;
}

const Binding<DataConfig>& data_binding() {
  static const Binding<DataConfig> b = make_data_binding();
  return b;
}

DataConfig data_config_from_yaml(const YAML::Node& data) {
  if (!data || data.IsNull()) return DataConfig{};
  if (!data.IsMap()) throw UsageError("data must be a mapping");
  return data_binding().read(data);
}

}  // namespace salt::config
