// salt's default ONNX feature map (salt/onnx/to_onnx.py get_default_onnx_feature_map):
// the names Athena uses for each input of the exported graph.
#pragma once
#include <string>
#include <vector>

namespace salt::deploy {

struct Feature {
  std::string athena_in;   // Athena's name of the input collection (metadata)
  std::string athena_out;  // the graph input's name ("jet_features", "track_features")
  std::string num_name;    // the dynamic axis of a sequence ("n_tracks"); empty for the global object
  std::string salt_name;   // the salt input ("jets", "tracks")
  bool is_global = false;
};

// Athena's track selections (TracksLoader); --track_selection must be one of them.
const std::vector<std::string>& track_selections();

// inputs: data.variables' keys in config order. Where salt's rule gives two inputs
// the same graph name, the later one is named after its full input name. `global` and `parameters` are not
// graph inputs (global is read from the global object, as salt's exporter does).
std::vector<Feature> default_feature_map(const std::string& track_selection, const std::vector<std::string>& inputs,
                                         const std::string& global_object);

}  // namespace salt::deploy
