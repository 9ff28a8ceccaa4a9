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

// The first num_jets jets of data.test_file (fewer if the file has fewer) plus the
// three edge jets: no constituents, one, every slot filled. InputError naming the
// file when it holds no jets.
Batch read_check_jets(training::RunSetup& setup, int64_t num_jets);

// salt's check when there is no test file (salt/onnx/to_onnx.py checks on random
// inputs): num_jets random jets plus the three edge jets. Each variable is drawn
// around its norm_dict mean with its std (the scale the model's InputNorm expects;
// standard normal where the dict has no entry), each constituent type with 1..L
// valid slots (L = data.num_inputs, else 40), padded slots zero. Seeded: the same
// jets every time.
Batch random_check_jets(const training::RunSetup& setup, int64_t num_jets);

// Where the check's jets come from.
enum class CheckJets { kTestFile, kRandom };

// The runner's input file for the first `jets` jets of `b`: per jet the global
// object [1, F] and each constituent type's real constituents [n, F], raw.
std::string ort_inputs_json(const Batch& b, const std::vector<Feature>& features, int64_t jets);

// Reads num_jets from data.test_file (or draws them, CheckJets::kRandom); InputError when an output differs by more
// than 1e-5 (float: absolute for values up to 1, relative above, so regression
// outputs in MeV are held to float32's precision) or at all (int8), is NaN, or is
// exactly 0 for every jet, and when the test file holds no jets. The runner's input
// and answer go to `work`, a new folder removed on every way out (StopRequested on
// SIGINT/SIGTERM included; the caller names it so that a SIGKILL's leftover is found).
ExportResult check_export(training::RunSetup& setup, const ExportPlan& plan, const std::filesystem::path& model,
                          const std::filesystem::path& work, const OrtRunner& runner, int64_t num_jets,
                          CheckJets source = CheckJets::kTestFile);

}  // namespace salt::deploy
