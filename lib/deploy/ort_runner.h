// ONNX Runtime for checks and benchmarks: scripts/ort_run.js in Node with the npm
// package onnxruntime-node (scripts/bootstrap.sh installs it into .ort/).
#pragma once
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>

namespace salt::deploy {

struct OrtRunner {
  std::filesystem::path script;
  std::string missing;  // why it cannot run (empty: available)
  bool available() const { return missing.empty(); }
};

// $SALT_ORT_DIR or <share>/ort (core/install_paths.h; in a build folder a link to
// the source tree's .ort) must hold node_modules/onnxruntime-node, and `node` must
// be on PATH.
OrtRunner find_ort_runner();

// Runs `model` on the jets of inputs_json (see scripts/ort_run.js) and returns the
// parsed outputs file; InputError with the runner's message when it fails.
YAML::Node run_ort(const OrtRunner& runner, const std::filesystem::path& model, const std::filesystem::path& inputs_json,
                   const std::filesystem::path& outputs_json, int threads = 1, int repeat = 0);

}  // namespace salt::deploy
