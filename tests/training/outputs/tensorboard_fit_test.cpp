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
import json, os, struct, subprocess, sys, tempfile
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
            print("markdown", v.tag, e.step, json.dumps(v.tensor.string_val[0].decode()))
        elif v.HasField("histo"):
            h = v.histo
            assert len(h.bucket) == len(h.bucket_limit) and sum(h.bucket) == h.num, v.tag
            print("histo", v.tag, e.step, repr(h.num), repr(h.min), repr(h.max), repr(h.sum))
        elif v.HasField("image"):
            i = v.image
            ok = i.encoded_image_string[:8] == b"\x89PNG\r\n\x1a\n"
            print("image", v.tag, e.step, i.width, i.height, int(ok))
)";

struct Histogram {
  double num = 0, min = 0, max = 0, sum = 0;
};

struct Decoded {
  std::string first_line;
  std::map<std::string, std::map<int64_t, double>> scalars;  // tag -> step -> value
  std::vector<std::string> texts;
  std::map<std::string, std::map<int64_t, std::string>> markdown;  // tag -> step -> text
  std::map<std::string, std::map<int64_t, Histogram>> histograms;
  std::map<std::string, std::map<int64_t, std::string>> images;  // tag -> step -> "<w> <h> <is PNG>"
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
    if (tag == "markdown" || tag == "histo" || tag == "image") {
      std::string name;
      int64_t step = 0;
      f >> name >> step;
      std::string rest;
      std::getline(f, rest);
      rest = rest.substr(1);
      if (tag == "markdown") d.markdown[name][step] = YAML::Load(rest).as<std::string>();  // a JSON string
      if (tag == "image") d.images[name][step] = rest;
      if (tag == "histo") {
        Histogram h;
        std::stringstream(rest) >> h.num >> h.min >> h.max >> h.sum;
        d.histograms[name][step] = h;
      }
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
    SALT_REQUIRE(have_python_module("google.protobuf"), "python3-protobuf is not installed");
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

namespace salt::testing {
namespace fs = std::filesystem;

// salt's WeightLogger/GradientLogger: their statistics under salt's names in
// metrics.csv, and a histogram per parameter in the TensorBoard files. The last
// weights histogram (after the last step) must describe the weights the final
// checkpoint holds, read back with Python's torch.
TEST_F(TensorBoardFit, WeightAndGradientLoggersWriteStatisticsAndHistograms) {
  const auto cfg = overlay("params.yaml", R"(
trainer:
  log_every_n_steps: 1
  logger:
    class_path: lightning.pytorch.loggers.TensorBoardLogger
    init_args: {save_dir: tb, name: params}
  callbacks:
    - class_path: salt.callbacks.Checkpoint  # the list replaces base.yaml's
      init_args: {monitor_loss: val/jets_classification_loss}
    - class_path: salt.callbacks.WeightLoggerCallback
      init_args: {log_every_n_steps: 4}
    - class_path: salt.callbacks.GradientLoggerCallback
      init_args: {log_every_n_steps: 4}
)");
  auto r = salt("fit", small_gn2({"-c", cfg.string(), "--trainer.max_epochs", "1", "-ls", "params"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = dir / "logs" / "GN2_cpu_params";
  const auto rows = read_metrics(run / "metrics.csv");
  bool weights = false, grads = false, total = false;
  for (const auto& row : rows)
    for (const auto& [column, value] : row) {
      weights |= column.rfind("weights_weights/model.", 0) == 0 && column.size() > 5 &&
                 column.compare(column.size() - 5, 5, "_mean") == 0;
      grads |= column.rfind("gradients_grad/model.", 0) == 0;
      total |= column == "gradient_total_magnitude" && value > 0;
    }
  EXPECT_TRUE(weights && grads && total);

  const auto files = event_files(dir / "tb" / "params" / "version_0");
  ASSERT_EQ(files.size(), 1u);
  const auto d = decode(files[0]);
  // 8 steps (2000 jets / 250): weights after steps 4 and 8, gradients before steps 0 and 4 (salt's
  // timing), at Lightning's labels: the steps taken before the batch's (3 and 7; 0 and 4)
  const std::string param = "model.init_nets.0.net.net.0.weight";
  ASSERT_TRUE(d.histograms.count("weights/" + param)) << "no weights/" << param;
  EXPECT_EQ(d.histograms.at("weights/" + param).size(), 2u);
  ASSERT_TRUE(d.histograms.count("gradients/" + param));
  EXPECT_EQ(d.histograms.at("gradients/" + param).size(), 2u);
  EXPECT_TRUE(d.histograms.at("gradients/" + param).count(0));
  const auto last = d.histograms.at("weights/" + param).rbegin()->second;
  EXPECT_EQ(d.histograms.at("weights/" + param).rbegin()->first, 7);
  EXPECT_TRUE(d.histograms.at("gradients/" + param).count(4));

  const auto ckpt = checkpoints(run).back();
  auto py = run_python(R"(
import sys, torch
t = torch.load(sys.argv[1], map_location="cpu", weights_only=False)["state_dict"][sys.argv[2]].double()
print(t.numel(), repr(t.min().item()), repr(t.max().item()), repr(t.sum().item()))
)",
                       {ckpt.string(), param});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  Histogram want;
  std::stringstream(py.out) >> want.num >> want.min >> want.max >> want.sum;
  EXPECT_EQ(last.num, want.num);
  EXPECT_DOUBLE_EQ(last.min, want.min);
  EXPECT_DOUBLE_EQ(last.max, want.max);
  EXPECT_NEAR(last.sum, want.sum, 1e-9 * std::max(1.0, std::abs(want.sum)));
}

// ConfusionMatrixCallback: a picture per validation and, in the TensorBoard files,
// the picture and the counts. The last epoch's counts equal the confusion matrix
// computed in Python from salt test's predictions on the validation file with the
// checkpoint of that epoch.
TEST_F(TensorBoardFit, ConfusionMatrixMatchesThePredictionsOfThatEpoch) {
  const auto cfg = overlay("cm.yaml", R"(
trainer:
  logger:
    class_path: lightning.pytorch.loggers.TensorBoardLogger
    init_args: {save_dir: tb, name: cm}
  callbacks:
    - class_path: salt.callbacks.Checkpoint  # the list replaces base.yaml's
      init_args: {monitor_loss: val/jets_classification_loss}
    - class_path: salt.callbacks.ConfusionMatrixCallback
      init_args:
        task_name: jets_classification
        class_names_override: {bjets: b-jets, ujets: light-jets}
    - class_path: salt.callbacks.PredictionWriter
      init_args:
        write_tracks: false
)");
  auto r = salt("fit", small_gn2({"-c", cfg.string(), "--trainer.max_epochs", "2", "-ls", "cm"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = dir / "logs" / "GN2_cpu_cm";
  for (const char* f : {"jets_classification_epoch=000.png", "jets_classification_epoch=000.pdf",
                        "jets_classification_epoch=001.png"})
    EXPECT_TRUE(fs::exists(run / "confusion_matrix" / f)) << f;
  const auto d = decode(event_files(dir / "tb" / "cm" / "version_0").at(0));
  const std::string tag = "confusion_matrix/jets_classification";
  ASSERT_EQ(d.images.count(tag), 1u);
  EXPECT_EQ(d.images.at(tag).size(), 2u);
  EXPECT_EQ(d.images.at(tag).rbegin()->second, "1200 900 1");
  ASSERT_EQ(d.markdown.count(tag), 1u);
  const auto table = d.markdown.at(tag).rbegin()->second;
  EXPECT_NE(table.find("| b-jets | cjets | light-jets | taujets |"), std::string::npos) << table;

  const auto last = checkpoints(run).back();
  auto t = salt("test", {"-c", (run / "config.yaml").string(), "--ckpt_path", last.string(), "--data.test_file",
                         (dir / "data/toy/pp_output_val.h5").string()});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const auto pred = last.parent_path() / (last.stem().string() + "__test_pp_output_val.h5");
  auto py = run_python(R"(
import sys, h5py, numpy as np
j = h5py.File(sys.argv[1])["jets"][:]
p = np.stack([j["GN2_cpu_pb"], j["GN2_cpu_pc"], j["GN2_cpu_pu"], j["GN2_cpu_ptau"]], axis=1).argmax(1)
m = np.zeros((4, 4), dtype=int)
for t, q in zip(j["flavour_label"], p):
    m[t, q] += 1
for row in m:
    print("| " + " | ".join(str(v) for v in row) + " |")
)",
                       {pred.string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  std::stringstream rows(py.out);
  int64_t total = 0;
  for (std::string row; std::getline(rows, row);) {
    EXPECT_NE(table.find(row), std::string::npos) << "row '" << row << "' not in\n" << table;
    for (std::stringstream cells(row); cells;) {
      std::string cell;
      cells >> cell;
      if (!cell.empty() && cell != "|") total += std::stoll(cell);
    }
  }
  EXPECT_EQ(total, 500);  // every validation jet
}

TEST_F(TensorBoardFit, ConfusionMatrixOfAnUnknownTaskIsOneLineAndNoRun) {
  const auto cfg = overlay("cm_bad.yaml", R"(
trainer:
  callbacks:
    - class_path: salt.callbacks.ConfusionMatrixCallback
      init_args: {task_name: jet_flavour}
)");
  auto r = salt("fit", small_gn2({"-c", cfg.string(), "--trainer.max_epochs", "1", "-ls", "bad"}));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("ConfusionMatrixCallback: task_name 'jet_flavour' is not a classification task of the model "
                       "(jets_classification, track_origin, track_vertexing)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "logs" / "GN2_cpu_bad"));
}

// Names from the config that become folders or files (a logger's name, version
// and sub_dir, the confusion matrix's task) cannot reach outside their folder:
// refused in one line when the config is read, before a run directory exists.
TEST_F(TensorBoardFit, NamesThatWouldLeaveTheirFolderAreRefused) {
  const auto outside = dir / "outside";
  const std::string logger = "trainer:\n  logger:\n    class_path: lightning.pytorch.loggers.TensorBoardLogger\n"
                             "    init_args: ";
  const std::vector<std::string> cases = {
      logger + "{save_dir: tb, name: ../outside}",
      logger + "{save_dir: tb, name: ok, version: ../../outside}",
      logger + "{save_dir: tb, sub_dir: " + outside.string() + "}",
      "trainer:\n  callbacks:\n    - class_path: salt.callbacks.ConfusionMatrixCallback\n"
      "      init_args: {task_name: ../../../outside/jets_classification}",
  };
  int i = 0;
  for (const auto& args : cases) {
    const auto suffix = "escape" + std::to_string(i);
    const auto cfg = overlay("escape" + std::to_string(i++) + ".yaml", args + "\n");
    auto r = salt("fit", small_gn2({"-c", cfg.string(), "--trainer.max_epochs", "1", "-ls", suffix}));
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("must name a folder below"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(outside)) << args;
    EXPECT_FALSE(fs::exists(dir / "logs" / ("GN2_cpu_" + suffix))) << args;
  }
}

// PerformanceWriter: one JSON line per validation (salt's format, read back with
// Python's json), the values those of metrics.csv; std_out prints them.
TEST_F(TensorBoardFit, PerformanceWriterAppendsOneJsonLinePerValidation) {
  const auto cfg = overlay("perf.yaml", R"(
trainer:
  log_every_n_steps: 2
  callbacks:
    - class_path: salt.callbacks.PerformanceWriter
      init_args: {add_metrics: [val/jets_classification_loss], std_out: true}
)");
  auto r = salt("fit", small_gn2({"-c", cfg.string(), "--trainer.max_epochs", "2", "-ls", "perf"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = dir / "logs" / "GN2_cpu_perf";
  auto py = run_python(R"(
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    print(d["epoch"], d["train_loss"], d["val_loss"], d["val/jets_classification_loss"], len(d["timestamp"]))
)",
                       {(run / "performance_metric.json").string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  std::vector<double> val_losses;
  for (const auto& row : read_metrics(run / "metrics.csv"))
    if (row.count("val/loss")) val_losses.push_back(row.at("val/loss"));
  ASSERT_EQ(val_losses.size(), 2u);
  std::stringstream lines(py.out);
  for (int epoch = 0; epoch < 2; ++epoch) {
    int e = -1, stamp = 0;
    std::string train, val, jets;
    ASSERT_TRUE(lines >> e >> train >> val >> jets >> stamp) << py.out;
    EXPECT_EQ(e, epoch);
    char want[32];
    std::snprintf(want, sizeof want, "%.5f", val_losses[epoch]);
    EXPECT_EQ(val, want);
    EXPECT_EQ(stamp, 26);  // 2026-11-24T06:46:27.123456
  }
  EXPECT_NE(r.out.find("epoch 1:\ntrain_loss="), std::string::npos) << r.out;
}

}  // namespace salt::testing
