// The `data` section: its schema bound to the typed DataConfig the loaders use.
// salt's defaults hold for keys a mapping leaves out (data_config_from_yaml on a
// partial mapping, as tests and scripts use it).
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/bind.h"
#include "config/edge_config.h"
#include "config/mf_config.h"

namespace salt::config {

// salt's LabellerConfig: derive flavour_label from truth variables (ftag's Labeller).
struct LabellerConfig {
  bool use_labeller = false;
  std::optional<std::vector<std::string>> class_names;  // ftag flavour names, in label order
  bool require_labels = true;                           // every jet must match a class
};

// One entry of salt's data.multi_target: where the global or constituent label
// `sel_label` compares true with `value` (opp one of == != >= <= > <), the label
// `target` (an existing label, replaced) or `custom_target` (a new label, NaN where no
// entry applies) takes the value of the label `source`. Entries apply in order.
struct MultiTarget {
  std::string input_name, sel_label, opp, source;
  std::optional<std::string> target, custom_target;
  double value = 0;

  const std::string& target_label() const { return target ? *target : *custom_target; }
};

// One entry of salt's data.parameters (parameterised networks): the values of a
// `parameters` variable that appear in training; other values (background jets) get
// one of them at random (with probabilities `prob`, else uniformly) while fitting;
// `salt test` evaluates every jet at `test`.
struct ParameterSpec {
  std::string name;
  std::vector<double> train;
  double test = 0;
  std::optional<std::vector<double>> prob;
};

// One variable of salt.data.transforms.GaussianNoise (data.transforms): its values
// are multiplied by draws of N(mean, std), as salt's code does.
struct NoiseSpec {
  std::string input, variable;
  double mean = 0, std = 0;
};

struct DataConfig {
  std::string train_file, val_file, test_file;  // "" when absent; a wildcard: many files (data/virtual_file.h)
  std::string train_vds_path, val_vds_path, test_vds_path;  // where their virtual file goes; "": salt's default
  std::string norm_dict, class_dict;            // "" when absent
  std::map<std::string, std::vector<std::string>> variables;  // input -> variables
  std::vector<std::string> input_order;                       // inputs in the order of the YAML
  std::string global_object = "jets";
  std::map<std::string, std::string> input_map;  // input -> dataset; filled with identity for every input
  std::map<std::string, int64_t> num_inputs;
  std::map<std::string, std::vector<std::string>> selections;  // constituent input -> ftag cut strings
  LabellerConfig labeller_config;  // use_labeller false: labels as in the file
  int64_t batch_size = 1000;
  int num_workers = 8;
  int64_t num_train = -1, num_val = -1, num_test = -1;
  std::optional<std::string> move_files_temp;
  std::optional<std::string> test_suff;
  bool pin_memory = true;  // effective only with CUDA
  bool persistent_workers = true;
  int prefetch_factor = 2;
  bool non_finite_to_num = false;
  bool ignore_finite_checks = false;
  // salt-cpp's plausibility check of the inputs against the norm dict (0: off);
  // make_salt_readable (config/salt_readable.h) leaves them out of config.yaml while they are at these defaults.
  double warn_input_sigma = 1e4;
  double max_input_sigma = 0;
  std::map<std::string, std::vector<std::string>> labels;  // extra label variables to load per input
  std::vector<MultiTarget> multi_target;                   // conditional label replacements, in order
  std::vector<ParameterSpec> parameters;                   // in the order of variables.parameters
  std::vector<NoiseSpec> noise;                            // data.transforms' GaussianNoise entries, in order
  std::optional<MaskformerConfig> mf_config;               // MaskFormer objects (input "objects")
  std::vector<EdgeConstructorConfig> edge_constructors;    // GN2XE edge features (at most one)

  // The dataset name of an input (input_map, else the input name itself).
  std::string dataset_of(const std::string& input) const;
};

const Binding<DataConfig>& data_binding();

// A `data` mapping (validated, or partial: absent keys keep salt's defaults).
DataConfig data_config_from_yaml(const YAML::Node& data_section);

}  // namespace salt::config
