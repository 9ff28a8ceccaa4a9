// salt's model.mup_config (maximal-update parametrisation, salt.utils.muP_utils):
// which hyperparameters are "widths", their values in the base and delta proxy
// models, and where the base shapes file lives. `salt mup` builds the two proxies
// and writes <shape_path>/storeshapes (the mup package's YAML base shapes); `salt
// fit` reads it back (models/mup.h) to scale initialisation, the readout and the
// per-parameter learning rates.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace salt::config {

// One width: e.g. embed_dim applied to init_nets' output_size and the encoder's embed_dim.
struct MupParameter {
  std::string name;                         // the key in mup_config (embed_dim)
  std::vector<std::string> apply_to;        // keys of model.model.init_args
  std::vector<std::string> parameter_name;  // one per apply_to: the key set inside it
  int64_t parameter_base = 0;               // its value in the base proxy model
  int64_t parameter_delta = 0;              // its value in the delta proxy model
};

// The widest proxy `salt mup` builds: 32x the zoo's widest model width (512),
// where one width-square matrix already takes 1 GiB.
constexpr int64_t kMaxMupWidth = 16384;

struct MupConfig {
  std::string shape_path = "./temp_mup";  // salt's default folder
  std::vector<MupParameter> parameters;
};

// A validated model.mup_config mapping; UsageError naming model.mup_config.<key>.
MupConfig read_mup_config(const YAML::Node& node);

// The base shapes file: <shape_path>/storeshapes (salt's SHAPE_PATH).
std::filesystem::path mup_shapes_file(const MupConfig& config);

// The resolved config with every width set to its base (base = true) or delta
// value, as salt's update_config does: in each model.model.init_args.<apply_to>
// (each entry of a list), the first key named parameter_name found depth-first.
// mup_config is emptied in the result. UsageError when a key is not found.
YAML::Node mup_proxy_config(const YAML::Node& resolved, const MupConfig& config, bool base);

// The same as a resolved config (its YAML and its typed settings read from it).
struct ResolvedConfig;
ResolvedConfig mup_proxy(const ResolvedConfig& resolved, const MupConfig& config, bool base);

}  // namespace salt::config
