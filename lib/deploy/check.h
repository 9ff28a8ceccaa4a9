// The export check (salt/onnx/check.py, on real jets): the exported graph in ONNX
// Runtime against salt-cpp's own inference path, jet by jet, on test jets with
// every constituent count the file has plus 0, 1 and all slots filled.
#pragma once
#include <filesystem>

#include "data/batch.h"
#include "deploy/export_plan.h"
#include "deploy/ort_runner.h"
#include "deploy/to_onnx.h"
#include "training/run_setup.h"

namespace salt::deploy {

// Reads num_jets from data.test_file; InputError when an output differs by more
// than 1e-5 (float) or at all (int8), is NaN, or is exactly 0 for every jet.
ExportResult check_export(training::RunSetup& setup, const ExportPlan& plan, const std::filesystem::path& model,
                          const OrtRunner& runner, int64_t num_jets);

}  // namespace salt::deploy
