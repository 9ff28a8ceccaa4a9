// The config of a checkpoint named on its own (`--ckpt_path` without `--config`, for
// salt test, validate, predict and to_onnx): salt's to_onnx rule, the run's
// config.yaml above ckpts/; else the config the checkpoint carries (salt-cpp's whole
// run config, or the model section of salt's LightningCLI hyper_parameters), written
// to a temporary file for as long as the object lives.
#pragma once
#include <filesystem>
#include <memory>
#include <string>

namespace salt::training {

struct CheckpointState;

class CheckpointConfig {
 public:
  // Throws UsageError, naming `command`, when there is no config.yaml and the
  // checkpoint carries no config.
  CheckpointConfig(const std::string& command, const std::filesystem::path& ckpt);
  ~CheckpointConfig();
  CheckpointConfig(const CheckpointConfig&) = delete;
  CheckpointConfig& operator=(const CheckpointConfig&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The checkpoint as read for its config (null when the config came from the run's
  // config.yaml): a caller that needs its weights too need not read it again.
  std::unique_ptr<CheckpointState> take_state();

 private:
  std::filesystem::path path_;
  std::unique_ptr<CheckpointState> state_;
  bool written_ = false;  // path_ is ours to remove
};

}  // namespace salt::training
