// Everything `salt fit` and `salt test` build from a resolved config before any
// output is written: the data settings, the normalisation and class dicts, the
// model, the label list for the readers, the seed. Every check that can fail
// (files, variables, class weights, loss_mode) happens here, so a failed start
// leaves nothing behind.
#pragma once
#include <yaml-cpp/yaml.h>

#include <memory>
#include <optional>
#include <string>

#include "data/class_dict.h"
#include "data/data_config.h"
#include "data/h5_reader.h"
#include "data/norm_dict.h"
#include "models/salt_wrapper.h"
#include "training/optim/one_cycle.h"
#include "training/trainer_config.h"
#include "config/compose.h"

namespace salt::training {

enum class Stage { kFit, kTest };

struct RunSetup {
  // The typed settings (config::resolve's, read once in lib/config): the trainer,
  // data and model sections and the top-level keys. Tuners may change a few
  // (data.batch_size, model.lrs_config) before the run plans with them.
  config::RunConfig run;
  // The resolved config with what salt bakes in at the start of a run: the seed
  // actually used, class weights of use_class_dict tasks, the init nets' variables,
  // model.norm_config. This is what config.yaml records.
  YAML::Node config;
  data::NormDict norm_dict;
  std::optional<data::ClassDict> class_dict;
  models::SaltWrapper model{nullptr};
  data::ReaderOptions reader_options;
  uint64_t seed = 42;  // the seed used: seed_everything's, or the one drawn
};

// `resolved` is config::resolve's output; it is copied, not modified.
RunSetup prepare_run(const config::ResolvedConfig& resolved, Stage stage);

// The file to open for a data file key's value: itself, or for a wildcard the virtual
// file over its matches, built or reused (data/virtual_file.h) at the key's *_vds_path.
std::string input_file(const data::DataConfig& data, const std::string& file);

// A reader of `path` (a data file key's value: wildcards are resolved by input_file)
// with the run's variables and labels; `num` first rows; test_stage: salt test's data
// (parameters at their test values).
std::shared_ptr<data::H5Reader> open_reader(const RunSetup& setup, const std::string& path, int64_t num,
                                            const std::string& num_key, bool test_stage = false);

// A reader with no jets (data.<num_key> 0, or an empty file): one line saying
// which and why the run cannot go on (`consequence`).
void refuse_empty(const data::H5Reader& reader, const std::string& path, int64_t num, const std::string& num_key,
                  const std::string& consequence);

// Seeds torch's generators (weights, dropout) from the run's seed.
void seed_everything(uint64_t seed);

}  // namespace salt::training
