// A run directory written by salt itself (tests/fixtures/written_by_salt: salt's
// `salt fit` of GN2 + GN2_cpu on the toy data, Lightning 2.6.1, Python torch 2.6;
// see its README.md), not a reproduction: salt-cpp reads the config.yaml salt saved
// and the checkpoint Lightning wrote, and its `salt test` predictions equal salt's
// own `salt test` output on the same 200 jets.
#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
  return text;
}

const char* kCkpt = "epoch=001-val_loss=0.92230.ckpt";

}  // namespace

TEST_F(FitTest, ARunWrittenBySaltItselfTestsAndExportsAsSaltDoes) {
  ASSERT_TRUE(have_python_module("h5py")) << "python3-h5py is not installed (scripts/bootstrap.sh installs it)";
  const auto fixture = source_dir() / "tests" / "fixtures" / "written_by_salt";
  const auto run = dir / "GN2_cpu_20261127-T102628";
  fs::copy(fixture / "GN2_cpu", run, fs::copy_options::recursive);
  fs::copy(fixture / "jets_200.h5", dir / "jets_200.h5");
  // salt's absolute paths, moved here: the run directory, and the toy files it
  // trained on (the norm dict is the run's copy of the same file).
  auto config = read_file(run / "config.yaml");
  config = replace_all(config, "/tmp/salt-real/saltrun/GN2_cpu_20261127-T102628", run.string());
  config = replace_all(config, "/work/main/data/toy/norm_dict.yaml", (run / "norm_dict.yaml").string());
  for (const char* file : {"pp_output_train.h5", "pp_output_val.h5", "pp_output_test_ttbar.h5"})
    config = replace_all(config, std::string("/work/main/data/toy/") + file, (dir / "jets_200.h5").string());
  ASSERT_EQ(config.find("/work/main"), std::string::npos);
  write_file(run / "config.yaml", config);
  const auto ckpt = run / "ckpts" / kCkpt;

  auto test = salt("test", {"--ckpt_path", ckpt.string()});
  ASSERT_EQ(test.exit_code, 0) << test.err;
  const auto ours = run / "ckpts" / "epoch=001-val_loss=0.92230__test_jets_200.h5";  // salt's own file name
  ASSERT_TRUE(fs::exists(ours)) << test.err;
  auto same = run_process({test_python(), (source_dir() / "scripts" / "compare_predictions.py").string(), ours.string(),
                           (fixture / "salt_predictions_jets_200.h5").string(), "--atol", "2e-6"});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("compare_predictions: jets (200,) 9 fields equal"), std::string::npos) << same.out;

  auto onnx = salt("to_onnx", {"--ckpt_path", ckpt.string(), "--force"});
  ASSERT_EQ(onnx.exit_code, 0) << onnx.err;
  EXPECT_TRUE(fs::exists(run / "network.onnx"));
}

}  // namespace salt::testing
