#include "training/checkpoints/checkpoint_config.h"

#include <spdlog/spdlog.h>

#include "core/errors.h"
#include "training/checkpoints/checkpoint.h"

namespace salt::training {

namespace fs = std::filesystem;

CheckpointConfig::CheckpointConfig(const std::string& command, const fs::path& ckpt) {
  const auto beside = fs::absolute(ckpt).parent_path().parent_path() / "config.yaml";
  if (fs::is_regular_file(beside)) {
    spdlog::info("no --config: the run's {}", beside.string());
    op_ = {config::ConfigOp::Kind::kMergeFile, beside.string(), "", "--config"};
    return;
  }
  state_ = std::make_unique<CheckpointState>(load_checkpoint(ckpt));
  const auto& state = *state_;
  const std::string& yaml = !state.config_yaml.empty() ? state.config_yaml : state.hparams_config_yaml;
  if (yaml.empty())
    throw UsageError(command + ": no --config, no " + beside.string() + " and no config in " + ckpt.string() +
                     " (neither salt-cpp's nor LightningCLI's hyper_parameters); pass --config");
  op_ = {config::ConfigOp::Kind::kMergeText, ckpt.string() + " (the config it carries)", yaml, "--ckpt_path"};
  spdlog::info("no --config and no {}: the config {} carries{}", beside.string(), ckpt.string(),
               state.config_yaml.empty() ? "; the model comes from the checkpoint's hyper_parameters" : "");
}

std::unique_ptr<CheckpointState> CheckpointConfig::take_state() { return std::move(state_); }

CheckpointConfig::~CheckpointConfig() = default;

}  // namespace salt::training
