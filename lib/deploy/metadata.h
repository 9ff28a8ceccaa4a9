// salt's ONNX metadata: the `gnn_config` JSON (salt/onnx/to_onnx.py add_metadata)
// that Athena and get_onnx_metadata read.
#pragma once
#include <filesystem>
#include <string>

#include "deploy/export_plan.h"
#include "deploy/to_onnx.h"
#include "training/run_setup.h"

namespace salt::deploy {

std::string gnn_config_json(const training::RunSetup& setup, const std::filesystem::path& config_path,
                            const ExportOptions& options, const ExportPlan& plan);

}  // namespace salt::deploy
