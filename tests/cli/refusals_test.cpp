// Refusals docs/refusals.md listed without a test: each is one line on stderr, the
// documented exit code, and nothing written.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/test_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

void expect_one_line(const ProcessResult& r, int code, const std::string& says) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
}

TEST(Refusals, SharedFilesThatAreNotThereAreNamed) {
  TempDir dir;
  const auto missing = (dir / "nowhere").string();
  expect_one_line(run_salt({"fit", "--print_config"}, dir.path(), {"SALT_SHARE_DIR=" + missing}), 2,
                  "SALT_SHARE_DIR=" + missing + ": no such folder");
  expect_one_line(run_salt({"fit", "--print_config"}, dir.path(), {"SALT_BASE_CONFIG=" + missing}), 2,
                  "SALT_BASE_CONFIG=" + missing + ": no such file");
}

TEST(Refusals, ToydataWithoutConstituentSlotsWritesNothing) {
  TempDir dir;
  expect_one_line(run_salt({"toydata", "-o", (dir / "toy").string(), "--num_train", "10", "--slots", "0"}), 2,
                  "--slots: must be a whole number >= 1, not 0");
  EXPECT_FALSE(fs::exists(dir / "toy") && !fs::is_empty(dir / "toy"));
}

TEST(Refusals, ShuffleWithTooLittleMemoryWritesNothing) {
  TempDir dir;
  write_toy_data(dir / "toy", 200, 50, 0);
  const auto out = dir / "shuffled.h5";
  expect_one_line(run_salt({"shuffle", (dir / "toy" / "pp_output_train.h5").string(), "-o", out.string(),
                            "--memory_mb", "5"}),
                  2, "--memory_mb must be at least");
  EXPECT_FALSE(fs::exists(out));
}

TEST(Refusals, OnnxMetadataOfAFileThatIsNotOnnx) {
  TempDir dir;
  write_file(dir / "model.onnx", "not a protobuf at all\n");
  expect_one_line(run_salt({"get_onnx_metadata", (dir / "model.onnx").string()}), 1, "model.onnx: not an ONNX model");
  expect_one_line(run_salt({"get_onnx_metadata", (dir / "absent.onnx").string()}), 1, "cannot read");
}

// No launcher (srun, torchrun-style variables) around a multi-node fit: refused
// before anything is read or written, since this process cannot start the others.
TEST(Refusals, SeveralNodesNeedALauncher) {
  TempDir dir;
  const auto configs = source_dir() / "configs";
  expect_one_line(run_salt({"fit", "-c", (configs / "GN2.yaml").string(), "-c", (configs / "GN2_cpu.yaml").string(),
                            "--trainer.num_nodes", "2", "--trainer.devices", "1", "--trainer.default_root_dir",
                            (dir / "logs").string(), "--force"},
                           dir.path()),
                  2, "trainer.num_nodes=2 needs a launcher that starts the processes on every node");
  EXPECT_FALSE(fs::exists(dir / "logs"));
}

}  // namespace
}  // namespace salt::testing
