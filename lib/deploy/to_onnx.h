// `salt to_onnx`: a trained checkpoint as an ONNX model with salt's interface for
// Athena (salt/onnx/to_onnx.py): one jet per call, the global object [1, F], each
// constituent type [n, F] with a dynamic axis, normalisation inside the graph,
// outputs {name}_pb ..., the aux track outputs, salt's gnn_config metadata. The
// file is written under a temp name, checked against salt-cpp's own forward pass
// in ONNX Runtime when available, and only then renamed.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace salt::deploy {

struct ExportOptions {
  std::filesystem::path ckpt_path;
  std::optional<std::filesystem::path> config;  // default: <ckpt dir>/../config.yaml
  std::string track_selection = "r22default";
  std::optional<std::string> name;              // default: the config's name without '_' and '-'
  std::vector<std::string> tasks;               // default: every jet-level task
  // salt's -mf/--object_name (MaskFormer): also <name>_leading_<object>_<target> per
  // object regression target and each track's <name>_<object>Index.
  std::optional<std::string> object_name;
  std::vector<std::string> combine_outputs, rename;
  bool overwrite = false, force = false;
  std::optional<std::filesystem::path> output;  // default: <ckpt dir>/../network.onnx
  std::optional<std::string> test_file;         // jets for the check (default: data.test_file)
  int64_t check_jets = 250;                     // real jets compared (plus 0-, 1- and max-track jets)
  bool require_check = false;                   // fail when ONNX Runtime is not available
  // Parameterised models: NAME=VALUE fixes a `parameters` input in the graph
  // (default: data.parameters.NAME.test, the value `salt test` uses).
  std::vector<std::string> parameters;
};

struct OutputDiff {
  std::string name;
  double max_abs_diff = 0;  // float outputs; for int8 outputs the number of differing entries
  double max_scaled_diff = 0;  // |diff| / max(1, |salt-cpp value|): what the 1e-5 limit applies to
  bool integer = false;
};

struct ExportResult {
  std::filesystem::path onnx;
  bool checked = false;  // compared in ONNX Runtime
  int64_t jets_checked = 0;
  std::vector<int64_t> track_counts;  // distinct constituent counts among the checked jets
  std::vector<OutputDiff> diffs;
};

ExportResult to_onnx(const ExportOptions& options);

}  // namespace salt::deploy
