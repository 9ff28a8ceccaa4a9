// The config of a checkpoint named on its own (`--ckpt_path` without
// `--config`, for salt test, validate, predict and to_onnx): salt's to_onnx
// rule, the run's config.yaml above ckpts/; else the config the checkpoint
// carries (salt-cpp's whole run config, or the model section of salt's
// LightningCLI hyper_parameters), merged from memory and named after the
// checkpoint in errors: no temporary file, which an error would name after it
// was gone (and which needs a writable TMPDIR).
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "config/compose.h"

namespace salt::training {

struct CheckpointState;

class CheckpointConfig {
 public:
  // Throws UsageError, naming `command`, when there is no config.yaml and the
  // checkpoint carries no config.
  CheckpointConfig(const std::string &command, const std::filesystem::path &ckpt);
  ~CheckpointConfig();
  CheckpointConfig(const CheckpointConfig &) = delete;
  CheckpointConfig &operator=(const CheckpointConfig &) = delete;

  // The operation that merges this config, in place of a `--config` file.
  const config::ConfigOp &merge_op() const { return op_; }
  // The checkpoint as read for its config (null when the config came from the
  // run's config.yaml): a caller that needs its weights too need not read it
  // again.
  std::unique_ptr<CheckpointState> take_state();

 private:
  config::ConfigOp op_;
  std::unique_ptr<CheckpointState> state_;
};

}  // namespace salt::training
