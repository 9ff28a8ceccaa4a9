// Toy data for any config: `salt toydata --config X.yaml` writes the datasets, the
// variables and the labels that X's data section and tasks read, so that every salt
// config (GN3 with flows and electrons, lepton taggers, event classifiers, hit and
// regression models) can be tried end to end without ATLAS data.
//
// The signal is simple but learnable: each row of the global object draws a class k
// of the main classification task (the first one on the global object), and every
// float variable of that row and of its constituents is drawn around a mean that
// depends on k and on the variable's name. Regression targets and their denominators
// are positive and depend on k too; other labels are drawn uniformly from the values
// their task accepts (the label_map's keys, else 0..classes-1); vertex indices are
// small integers with -1 for "no vertex". With data.labeller_config, the truth
// variables are set so that ftag's flavour cuts give class k back.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config/data_config.h"
#include "data/toy_data.h"

namespace salt::data {

struct ToyField {
  enum class Kind {
    kFloat,     // an input: normal around a class-dependent mean
    kPositive,  // a regression target, denominator or sample weight
    kClass,     // an integer label drawn from `values`
    kMain,      // the main task's label: values[k] for the row's class k
    kVertex,    // a vertex index: -1..2
    kTruth,     // a labeller variable: set from the class's flavour cuts
    kObjectId,  // MaskFormer: an object's id (its slot + 1)
    kParentId,  // MaskFormer: a constituent's object id, or -1 (none)
  };
  std::string name;
  Kind kind = Kind::kFloat;
  std::vector<int64_t> values;   // kClass, kMain: raw values
  std::vector<int64_t> classes;  // the class each raw value maps to (for the class dict)
  int64_t num_classes = 0;
};

struct ToyDataset {
  std::string name;        // in the file
  bool sequence = false;   // (N, slots) constituents with a `valid` field, else (N,)
  int64_t slots = 1;
  std::vector<ToyField> fields;
};

struct ToySchema {
  std::string global_dataset = "jets";
  std::vector<ToyDataset> datasets;     // the global object's first
  int64_t num_classes = 1;              // classes k of the main task
  std::vector<std::string> class_names; // the global dataset's flavour_label attribute
  std::vector<std::string> labeller_classes;  // non-empty: kTruth fields follow their cuts
  std::map<std::string, std::vector<std::string>> norm_variables;  // dataset -> variables in norm_dict
  std::map<std::string, std::vector<std::string>> class_dict_labels;  // dataset -> labels in class_dict
  std::string objects_dataset;  // MaskFormer's objects (data.mf_config), "" without
};

// The most constituent slots a toy dataset has: 10x the zoo's most (100 tracks).
// Before, a billion (--slots, data.num_inputs) went to HDF5, whose chunk limit
// (4 GiB) gave "filters can only be used with chunked layout", naming no key.
constexpr int64_t kMaxToySlots = 1024;

// The schema a config reads. `model_model` is the validated model.model node
// (class_path + init_args); `slots` (1 to kMaxToySlots) the constituent slots where
// data.num_inputs sets none. UsageError naming the key for what cannot be generated.
ToySchema toy_schema_from_config(const YAML::Node& model_model, const config::DataConfig& data, int64_t slots);

// Writes train/val/test files and the norm and class dicts of `schema` into
// options.out_dir (same names, same temp-then-rename guarantees as write_toy_data).
ToyDataFiles write_schema_toy_data(const ToySchema& schema, const ToyDataOptions& options);

}  // namespace salt::data
