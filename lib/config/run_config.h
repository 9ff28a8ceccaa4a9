// A validated config as typed settings: what config::resolve returns next to the
// YAML it writes as config.yaml. Everything outside lib/config reads these, never
// the YAML by key. Model components read their own init_args through their
// bindings (models::build_model on `model.model`).
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/data_config.h"
#include "config/lrs_config.h"
#include "config/mup_config.h"
#include "config/trainer_config.h"

namespace salt::config {

// The `model` section around the network.
struct ModelSection {
  YAML::Node model{YAML::NodeType::Null};  // model.model, a validated salt.models.SaltModel component
  LrsConfig lrs;
  std::string global_object = "jets";
  std::string name = "salt";
  std::string loss_mode = "wsum";
  std::string optimizer = "AdamW";
  std::optional<MupConfig> mup_config;  // model.mup_config (muP)
};

// salt-cpp's fine-tuning (`init_from`; salt has none): a new training that starts
// from another run's weights, all of them or those the patterns pick, with a new
// optimizer and schedule. Patterns are regular expressions searched in the state
// keys (salt's names, e.g. model.encoder.layers.0.attention.linear_q.weight).
struct InitFrom {
  std::string ckpt_path;              // a salt or salt-cpp checkpoint; only its state_dict is read
  std::vector<std::string> include;   // the tensors taken; empty: every one
  std::vector<std::string> exclude;   // of those, the ones left at their initial values
  std::vector<std::string> freeze;    // parameters not trained: no gradient, no optimizer state
};

struct RunConfig {
  std::optional<int64_t> seed;  // seed_everything: an int; nullopt: draw one
  bool record_drawn_seed = true;  // seed_everything: true records the drawn seed in config.yaml (false does not)
  std::string name = "salt";
  std::optional<std::string> ckpt_path;
  bool force = false;
  bool tag = false;
  bool overwrite_config = false;
  std::optional<std::string> log_suffix;
  std::optional<InitFrom> init_from;
  TrainerConfig trainer;
  DataConfig data;
  ModelSection model;
};

// The typed settings of a validated config (config::resolve's output, or a
// config.yaml salt-cpp wrote).
RunConfig read_run_config(const YAML::Node& validated);

// The init_from of a resolved config (a checkpoint's "config"): what its run
// froze is what a resume of it freezes. nullopt: none, or a config without it.
std::optional<InitFrom> init_from_of(const YAML::Node& resolved);

}  // namespace salt::config
