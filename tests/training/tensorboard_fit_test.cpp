// trainer.logger writes TensorBoard event files, read back here by an independent
// decoder: Python's protobuf (Debian) with classes protoc generates from our
// .proto, and a CRC-32C of its own over the TFRecord framing.
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

// argv: proto dir, event file. Prints one line per scalar "tag step value", then
// "text <tag>" for text summaries and "version <file_version>". Fails on a bad CRC.
const char* kDecoder = R"(
import os, struct, subprocess, sys, tempfile
proto_dir, path = sys.argv[1], sys.argv[2]
out = tempfile.mkdtemp()
subprocess.check_call(["protoc", "-I", proto_dir, "--python_out", out, os.path.join(proto_dir, "tensorboard", "tensorboard.proto")])
sys.path.insert(0, os.path.join(out, "tensorboard"))
import tensorboard_pb2 as pb

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF

def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

data = open(path, "rb").read()
pos = 0
while pos < len(data):
    header = data[pos:pos + 8]
    (length,) = struct.unpack("<Q", header)
    (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
    assert length_crc == masked(header), "length CRC at %d" % pos
    body = data[pos + 12:pos + 12 + length]
    (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
    assert body_crc == masked(body), "data CRC at %d" % pos
    pos += 16 + length
    e = pb.Event()
    e.ParseFromString(body)
    if e.HasField("file_version"):
        print("version", e.file_version)
    for v in e.summary.value:
        if v.HasField("simple_value"):
            print(v.tag, e.step, repr(v.simple_value))
        elif v.HasField("tensor"):
            print("text", v.tag, v.metadata.plugin_data.plugin_name, len(v.tensor.string_val[0]))
)";

struct Decoded {
  std::string first_line;
  std::map<std::string, std::map<int64_t, double>> scalars;  // tag -> step -> value
  std::vector<std::string> texts;
};

Decoded decode(const fs::path& event_file) {
  auto r = run_python(kDecoder, {(source_dir() / "lib").string(), event_file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Decoded d;
  std::stringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (d.first_line.empty()) d.first_line = line;
    std::stringstream f(line);
    std::string tag;
    f >> tag;
    if (tag == "version") continue;
    if (tag == "text") {
      std::string name;
      f >> name;
      d.texts.push_back(name + " " + line.substr(line.find(name) + name.size() + 1));
      continue;
    }
    int64_t step = 0;
    double value = 0;
    f >> step >> value;
    d.scalars[tag][step] = value;
  }
  return d;
}

std::vector<fs::path> event_files(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) out.push_back(e.path());
  return out;
}

}  // namespace

class TensorBoardFit : public FitTest {
 protected:
  void SetUp() override {
    FitTest::SetUp();
    if (!have_python_module("google.protobuf")) GTEST_SKIP() << "SKIP: python3-protobuf is not installed";
  }
  fs::path overlay(const std::string& name, const std::string& yaml) {
    const auto path = dir / name;
    std::ofstream(path) << yaml;
    return path;
  }
};

TEST_F(TensorBoardFit, EveryLoggedMetricIsReadBackWithItsStep) {
  const auto cfg = overlay("tb.yaml", R"(
trainer:
  log_every_n_steps: 2
  logger:
    class_path: lightning.pytorch.loggers.TensorBoardLogger
    init_args: {save_dir: tb, name: gn2}
  callbacks:
    - class_path: lightning.pytorch.callbacks.LearningRateMonitor
)");
  auto r = salt("fit", small_gn2({"-c", cfg.string(), "--trainer.max_epochs", "2", "-ls", "tb"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto files = event_files(dir / "tb" / "gn2" / "version_0");  // Lightning's layout
  ASSERT_EQ(files.size(), 1u);
  const auto d = decode(files[0]);
  EXPECT_EQ(d.first_line, "version brain.Event:2");

  // Every value of metrics.csv is there, at its step, as float32.
  const auto rows = read_metrics(dir / "logs" / "GN2_cpu_tb" / "metrics.csv");
  ASSERT_FALSE(rows.empty());
  int checked = 0;
  for (const auto& row : rows) {
    const auto step = static_cast<int64_t>(row.at("step"));
    for (const auto& [column, value] : row) {
      if (column == "step") continue;
      ASSERT_TRUE(d.scalars.count(column)) << column;
      ASSERT_TRUE(d.scalars.at(column).count(step)) << column << " at step " << step;
      EXPECT_FLOAT_EQ(static_cast<float>(d.scalars.at(column).at(step)), static_cast<float>(value)) << column;
      ++checked;
    }
  }
  EXPECT_GT(checked, 20);
  EXPECT_TRUE(d.scalars.count("val/loss"));
  // The learning rate at every optimizer step (16 of them), not only the logged ones.
  ASSERT_TRUE(d.scalars.count("lr-AdamW"));
  EXPECT_EQ(d.scalars.at("lr-AdamW").size(), 16u);
  ASSERT_EQ(d.texts.size(), 1u);
  EXPECT_EQ(d.texts[0].substr(0, 11), "config text");

  // A second run goes to version_1, as Lightning does.
  auto again = salt("fit", small_gn2({"-c", cfg.string(), "--trainer.max_epochs", "1", "-ls", "tb2"}));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(event_files(dir / "tb" / "gn2" / "version_1").size(), 1u);
}

// salt's base config names Comet, which cannot be reached: one line, and the
// TensorBoard files go into the run directory.
TEST_F(TensorBoardFit, CometSaysSoAndWritesTensorBoardFilesInstead) {
  const auto cfg = overlay("comet.yaml", R"(
trainer:
  logger:
    class_path: lightning.pytorch.loggers.comet.CometLogger
    init_args: { project: salt }
)");
  auto r = salt("fit", small_gn2({"-c", cfg.string(), "--trainer.max_epochs", "1", "-ls", "comet"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = dir / "logs" / "GN2_cpu_comet";
  const std::string line = "comet.yaml:3: lightning.pytorch.loggers.CometLogger cannot be reached from salt-cpp; "
                           "TensorBoard event files are written to <run>/tensorboard instead";
  const auto at = r.err.find(line);
  EXPECT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("cannot be reached", at + line.size()), std::string::npos) << "said once:\n" << r.err;
  EXPECT_NE(r.err.find((run / "tensorboard").string()), std::string::npos) << r.err;
  const auto files = event_files(run / "tensorboard");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(decode(files[0]).scalars.count("val/loss"));
}

}  // namespace salt::testing
