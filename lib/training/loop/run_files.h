// The files salt writes at the start of a fit into the run directory (rank 0):
// config.yaml (the resolved config, pointing at the dict copies), copies of
// norm_dict.yaml and class_dict.yaml, and metadata.yaml. All written atomically.
#pragma once
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <optional>

#include "data/h5_reader.h"
#include "training/loop/epoch_resources.h"
#include "training/run_setup.h"
#include "training/step/step_options.h"

namespace salt::training {

struct RunInfo {
  const data::H5Reader* train = nullptr;
  const data::H5Reader* val = nullptr;
  int64_t trainable_params = 0;
  int num_gpus = 0;
  std::vector<int> gpu_ids;
  std::string timestamp;
  YAML::Node git;  // git_repo/git_commit/git_branch/git_dirty (null values without a repo)
  // Wildcard inputs: the matched files with their jets (the readers above may read temp copies).
  std::vector<data::VirtualMember> train_members, val_members;
  std::string float32_matmul_precision;        // as set for the run ("highest" on CPU)
  YAML::Node step_options;                     // step_options_yaml: each switch's value and source
  YAML::Node init_from;                        // fine-tuning: what was taken and frozen; undefined when none
};

// Writes config.yaml, the dict copies and metadata.yaml into `run_dir` (created).
// Returns the config as written.
YAML::Node write_run_files(const std::filesystem::path& run_dir, const RunSetup& setup, const RunInfo& info);

// Rewrites metadata.yaml's `resources`: every stage measured so far (time, time
// waiting for data, peak host and GPU memory), the run's peaks and the attention
// kernels the model ran; with `graphs`, what the CUDA graphs did so far
// (record_graphs_count); the rest of the file is kept.
void write_run_resources(const std::filesystem::path& run_dir, const std::vector<EpochResources>& stages,
                         const std::vector<std::string>& attention_kernels,
                         const std::optional<GraphsCount>& graphs = std::nullopt);

}  // namespace salt::training
