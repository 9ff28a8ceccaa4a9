// salt's ONNX metadata: the `gnn_config` JSON (salt/onnx/to_onnx.py
// add_metadata) that Athena and get_onnx_metadata read.
#pragma once
#include <filesystem>
#include <string>

#include "config/compose.h"
#include "deploy/export_plan.h"
#include "deploy/to_onnx.h"
#include "training/run_setup.h"

namespace salt::deploy {

// `config` is the model's config as merged: a config.yaml (with the run's
// metadata.yaml beside it), or the config the checkpoint carries (no metadata).
std::string gnn_config_json(const training::RunSetup &setup, const config::ConfigOp &config,
                            const ExportOptions &options, const ExportPlan &plan);

}  // namespace salt::deploy
