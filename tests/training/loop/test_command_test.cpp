// `salt test` end to end: best checkpoint, salt's output file layout read back
// with the HDF5 library, the performance table; and every shipped model config
// trains and tests on the toy data.
#include <cstring>
#include <map>
#include <sstream>
#include <string>

#include <yaml-cpp/yaml.h>

#include "core/errors.h"
#include "data/h5_file.h"
#include "training/fit_support.h"
#include "training/loop/evaluate.h"

namespace salt::testing {
namespace fs = std::filesystem;

TEST(BestCheckpoint, LowestLossValueWins) {
  TempDir dir;
  for (const auto* name : {"epoch=000-val_loss=0.50000.ckpt", "epoch=001-val_loss=0.40000.ckpt",
                           "epoch=002-val_loss=0.45000.ckpt", "epoch=003-val_loss=-0.10000.txt", "notes.ckpt"})
    write_file(dir / name, "x");
  EXPECT_EQ(training::best_checkpoint(dir.path()).filename(), "epoch=001-val_loss=0.40000.ckpt");
  write_file(dir / "epoch=004-val_loss=-0.20000.ckpt", "x");  // negative losses parse too
  EXPECT_EQ(training::best_checkpoint(dir.path()).filename(), "epoch=004-val_loss=-0.20000.ckpt");
  write_file(dir / "epoch=005-val_loss=nan.ckpt", "x");  // a diverged epoch is never the best...
  EXPECT_EQ(training::best_checkpoint(dir.path()).filename(), "epoch=004-val_loss=-0.20000.ckpt");
  TempDir diverged;  // ...but still found when it is all there is
  write_file(diverged / "epoch=000-val_loss=nan.ckpt", "x");
  EXPECT_EQ(training::best_checkpoint(diverged.path()).filename(), "epoch=000-val_loss=nan.ckpt");
  TempDir empty;
  EXPECT_THROW(training::best_checkpoint(empty.path()), UsageError);
  EXPECT_THROW(training::best_checkpoint(empty / "missing"), UsageError);
}

TEST(SampleName, SaltsRule) {
  EXPECT_EQ(training::sample_name("/x/pp_output_test_ttbar.h5"), "ttbar");
  EXPECT_EQ(training::sample_name("pp_output_test_zprime.h5"), "zprime");
  EXPECT_EQ(training::sample_name("my_test_file.h5"), "my_test_file");
  EXPECT_EQ(training::sample_name("a_b_c_d_e.h5"), "a_b_c_d_e");
}

// A checkpoint without -c: the run's config.yaml above ckpts/, or, for a checkpoint
// on its own, the config it carries (before: base.yaml's "missing required key 'model'").
TEST_F(FitTest, TestAndValidateOfACheckpointWithoutConfigFindTheirConfig) {
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "run"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto run = dir / "logs" / "GN2_cpu_run";
  const auto ckpt = checkpoints(run).back();
  auto r = salt("validate", {"--ckpt_path", ckpt.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no --config: the run's " + (run / "config.yaml").string()), std::string::npos) << r.err;

  fs::create_directories(dir / "lone");
  const auto lone = dir / "lone" / "m.ckpt";
  fs::copy_file(ckpt, lone);
  r = salt("test", {"--ckpt_path", lone.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the config " + lone.string() + " carries"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(dir / "lone" / "m__test_ttbar.h5"));
  // to_onnx finds it by the same rule (training::CheckpointConfig): salt-cpp's whole
  // run config, so the ONNX Runtime check reads the run's test file.
  auto onnx = salt("to_onnx", {"--ckpt_path", lone.string(), "--check_jets", "10", "--force", "--output",
                               (dir / "lone" / "m.onnx").string()});
  EXPECT_EQ(onnx.exit_code, 0) << onnx.err;
  EXPECT_NE(onnx.err.find("the config " + lone.string() + " carries\n"), std::string::npos) << onnx.err;
  EXPECT_TRUE(fs::exists(dir / "lone" / "m.onnx"));
  const auto with_config = salt("test", {"-c", (run / "config.yaml").string(), "--ckpt_path", ckpt.string()});
  ASSERT_EQ(with_config.exit_code, 0) << with_config.err;
  auto jets_bytes = [](const fs::path& file) {
    const auto f = data::h5::File::open_read(file);
    const auto jets = f.dataset("jets");
    std::vector<uint8_t> bytes(static_cast<size_t>(jets.rows()) * jets.layout().record_size);
    jets.read_records(0, jets.rows(), 1, bytes.data());
    return bytes;
  };
  EXPECT_EQ(jets_bytes(dir / "lone" / "m__test_ttbar.h5"),
            jets_bytes(run / "ckpts" / (ckpt.stem().string() + "__test_ttbar.h5")))
      << "the lone checkpoint's predictions differ from the run's";

  // The same checkpoint as salt writes it (LightningCLI's hyper_parameters, no
  // salt-cpp config): the model comes from them, the data and trainer from the
  // defaults (base.yaml's precision, so the values may differ in the last bits).
  const auto theirs = dir / "lone" / "theirs.ckpt";
  auto py = run_python(read_file(source_dir() / "tests" / "zoo" / "as_salt_writes_it.py"),
                       {ckpt.string(), theirs.string(), "2"});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  r = salt("test", {"--ckpt_path", theirs.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(jets_bytes(dir / "lone" / "theirs__test_ttbar.h5").size(), jets_bytes(dir / "lone" / "m__test_ttbar.h5").size());

  // A suffix that would put the prediction file elsewhere (before: ckpts/x.h5 beside a new folder).
  r = salt("test", {"--ckpt_path", lone.string(), "--data.test_suff", "../../x"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("data.test_suff '../../x' must not contain '/'"), std::string::npos) << r.err;

  write_file(dir / "lone" / "junk.ckpt", "not a checkpoint");
  r = salt("test", {"--ckpt_path", (dir / "lone" / "junk.ckpt").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("junk.ckpt: not a checkpoint"), std::string::npos) << r.err;
}

TEST_F(FitTest, TestWritesSaltsPredictionFile) {
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "run"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto run = dir / "logs" / "GN2_cpu_run";
  // write_tracks through the list index of the PredictionWriter callback
  auto r = salt("test", {"-c", (run / "config.yaml").string(), "--trainer.callbacks.1.init_args.write_tracks=true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto best = training::best_checkpoint(run / "ckpts");
  EXPECT_NE(r.err.find("testing checkpoint " + best.string()), std::string::npos) << r.err;
  auto out = best.parent_path() / (best.stem().string() + "__test_ttbar.h5");
  ASSERT_TRUE(fs::exists(out)) << out;
  EXPECT_NE(r.out.find("GN2_cpu b-tagging performance (f_c = 0.20"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("77%"), std::string::npos) << r.out;

  auto file = data::h5::File::open_read(out);
  auto input = data::h5::File::open_read(dir / "data/toy/pp_output_test_ttbar.h5");
  auto jets = file.dataset("jets");
  auto in_jets = input.dataset("jets");
  ASSERT_EQ(jets.rows(), 500);
  auto names = jets.layout().names();
  auto in_names = in_jets.layout().names();
  // the input's own fields first, in order, then the predictions
  ASSERT_GE(names.size(), in_names.size() + 4);
  for (std::size_t i = 0; i < in_names.size(); ++i) EXPECT_EQ(names[i], in_names[i]);
  std::vector<std::string> preds(names.begin() + static_cast<long>(in_names.size()), names.end());
  EXPECT_EQ(preds, (std::vector<std::string>{"GN2_cpu_pb", "GN2_cpu_pc", "GN2_cpu_pu", "GN2_cpu_ptau"}));
  // rows in input order, probabilities summing to one
  std::vector<uint8_t> a(500 * jets.layout().record_size), b(500 * in_jets.layout().record_size);
  jets.read_records(0, 500, 1, a.data());
  in_jets.read_records(0, 500, 1, b.data());
  const auto* ev_out = jets.layout().find("eventNumber");
  const auto* ev_in = in_jets.layout().find("eventNumber");
  for (int i = 0; i < 500; ++i) {
    int64_t x, y;
    std::memcpy(&x, a.data() + i * jets.layout().record_size + ev_out->offset, 8);
    std::memcpy(&y, b.data() + i * in_jets.layout().record_size + ev_in->offset, 8);
    ASSERT_EQ(x, y) << "row " << i;
    float sum = 0;
    for (const auto& p : preds) {
      float v;
      std::memcpy(&v, a.data() + i * jets.layout().record_size + jets.layout().find(p)->offset, 4);
      EXPECT_GE(v, 0.0f);
      sum += v;
    }
    EXPECT_NEAR(sum, 1.0f, 1e-4);
  }
  auto tracks = file.dataset("tracks");
  EXPECT_EQ(tracks.rows(), 500);
  EXPECT_EQ(tracks.cols(), 40);
  auto track_names = tracks.layout().names();
  for (const auto* f : {"d0", "valid", "GN2_cpu_pPileup", "GN2_cpu_pFromB", "GN2_cpu_pOtherSecondary", "VertexIndex", "mask"})
    EXPECT_NE(std::find(track_names.begin(), track_names.end(), f), track_names.end()) << f;
  EXPECT_EQ(tracks.layout().find("mask")->type.str(), "bool");
  EXPECT_EQ(tracks.layout().find("VertexIndex")->type.str(), "i8");
  EXPECT_EQ(tracks.layout().find("GN2_cpu_pFromB")->type.str(), "f4");
  // mask == !valid on every slot
  std::vector<uint8_t> t(500 * 40 * tracks.layout().record_size);
  tracks.read_records(0, 500, 40, t.data());
  const auto rs = tracks.layout().record_size;
  for (int k = 0; k < 500 * 40; ++k)
    ASSERT_EQ(t[k * rs + tracks.layout().find("mask")->offset], 1 - t[k * rs + tracks.layout().find("valid")->offset]);

  // no stray temp files next to the output
  for (const auto& e : fs::directory_iterator(best.parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST_F(FitTest, TestSuffixHalfPrecisionAndExplicitCheckpoint) {
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "run"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto run = dir / "logs" / "GN2_cpu_run";
  auto first = checkpoints(run).at(0);
  auto r = salt("test", {"-c", (run / "config.yaml").string(), "--ckpt_path", first.string(), "--data.test_suff", "v2",
                         "--data.num_test", "300", "--trainer.callbacks.1.init_args.half_precision=true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = run / "ckpts" / (first.stem().string() + "__test_ttbar_v2.h5");
  ASSERT_TRUE(fs::exists(out));
  auto jets = data::h5::File::open_read(out).dataset("jets");
  EXPECT_EQ(jets.rows(), 300);
  EXPECT_EQ(jets.layout().find("GN2_cpu_pb")->type.str(), "f2");
}

// The prediction file as ftag's H5Writer (salt's PredictionWriter) lays it out:
// writer_version, every float field in the output precision (test-file inputs
// too: float16 and float64 become float32), resizable datasets, 100-row chunks.
TEST_F(FitTest, PredictionFileHasFtagsWriterLayout) {
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "1", "--data.num_train", "1000", "-ls", "run"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto run = dir / "logs" / "GN2_cpu_run";
  fs::create_directories(dir / "mixed");
  const auto mixed = dir / "mixed" / "pp_output_test_ttbar.h5";
  auto conv = run_python(R"(
import sys, h5py, numpy as np
src, dst = h5py.File(sys.argv[1]), h5py.File(sys.argv[2], "w")
for name, ds in src.items():
    a = ds[:]
    new = {"pt_btagJes": "f8", "eta_btagJes": "f2", "d0": "f2"}  # pt in MeV overflows f2
    dt = np.dtype([(f, new.get(f, a.dtype[f].str)) for f in a.dtype.names])
    dst.create_dataset(name, data=a.astype(dt), compression="lzf")
for k, v in src.attrs.items(): dst.attrs[k] = v
for name in src: 
    for k, v in src[name].attrs.items(): dst[name].attrs[k] = v
)",
                         {(dir / "data/toy/pp_output_test_ttbar.h5").string(), mixed.string()});
  ASSERT_EQ(conv.exit_code, 0) << conv.err;
  const auto ckpt = checkpoints(run).front();
  const auto out = ckpt.parent_path() / (ckpt.stem().string() + "__test_ttbar.h5");
  for (const std::string half : {"false", "true"}) {
    SCOPED_TRACE("half_precision " + half);
    auto r = salt("test", {"-c", (run / "config.yaml").string(), "--data.test_file", mixed.string(),
                           "--trainer.callbacks.1.init_args.write_tracks=true",
                           "--trainer.callbacks.1.init_args.half_precision=" + half});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto check = run_python(R"(
import sys, h5py, numpy as np
out, src, half = h5py.File(sys.argv[1]), h5py.File(sys.argv[2]), sys.argv[3] == "true"
want = np.dtype("f2" if half else "f4")
print(out.attrs["writer_version"])
for name in ("jets", "tracks"):
    ds = out[name]
    floats = {ds.dtype[f] for f in ds.dtype.names if ds.dtype[f].kind == "f"}
    assert floats == {want}, (name, floats)
    assert ds.maxshape == (None,) + ds.shape[1:], (name, ds.maxshape)
assert out["tracks"].chunks == (100, out["tracks"].shape[1]), out["tracks"].chunks
j, sj = out["jets"][:], src["jets"][:]
assert np.array_equal(j["pt_btagJes"], sj["pt_btagJes"].astype(want))
assert np.array_equal(j["eta_btagJes"], sj["eta_btagJes"].astype(want))
assert np.array_equal(j["eventNumber"], sj["eventNumber"]) and j["eventNumber"].dtype == sj["eventNumber"].dtype
t, st = out["tracks"][:], src["tracks"][:]
assert np.array_equal(t["d0"], st["d0"].astype(want))
print("ok")
)",
                            {out.string(), mixed.string(), half});
    ASSERT_EQ(check.exit_code, 0) << check.err;
    EXPECT_EQ(check.out, "v0.3.3\nok\n");
  }
}

class ShippedModel : public FitTest, public ::testing::WithParamInterface<std::string> {};

// Each shipped config as it is (sizes included) on a quarter of the toy data: what
// is checked is that it trains and tests, not what it learns (MaskFormer took 42 s
// of the suite on all of it).
TEST_P(ShippedModel, TrainsAndTestsOnToyData) {
  const auto config = GetParam();
  auto fit = salt("fit", {"-c", cfg(config), "--trainer.max_epochs", "1", "--data.batch_size", "250", "--data.num_workers",
                          "1", "-ls", "x", "--trainer.precision", "32", "--trainer.enable_progress_bar", "false",
                          "--data.num_train", "500", "--data.num_val", "250", "--data.num_test", "250"});
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  auto runs_now = runs();
  ASSERT_EQ(runs_now.size(), 1u);
  auto test = salt("test", {"-c", (runs_now[0] / "config.yaml").string()});
  ASSERT_EQ(test.exit_code, 0) << test.err;
  EXPECT_NE(test.out.find("b-tagging performance"), std::string::npos) << test.out;
  auto ckpt = checkpoints(runs_now[0]).at(0);
  EXPECT_TRUE(fs::exists(ckpt.parent_path() / (ckpt.stem().string() + "__test_ttbar.h5")));
}

INSTANTIATE_TEST_SUITE_P(Configs, ShippedModel, ::testing::Values("GN2.yaml", "dips.yaml", "DL1.yaml", "MaskFormer.yaml"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.substr(0, info.param.find('.'));
                         });

}  // namespace salt::testing

namespace salt::testing {

TEST_F(FitTest, ValidatePrintsTheCheckpointsValidationLosses) {
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "v"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto run = dir / "logs" / "GN2_cpu_v";
  auto r = salt("validate", {"-c", (run / "config.yaml").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The same number the fit logged for this checkpoint (its name carries it).
  auto ckpt = checkpoints(run).at(0).filename().string();
  const double logged = std::stod(ckpt.substr(ckpt.find("val_loss=") + 9, 7));
  auto pos = r.out.find("val/jets_classification_loss");
  ASSERT_NE(pos, std::string::npos) << r.out;
  const double validated = std::stod(r.out.substr(pos + std::string("val/jets_classification_loss").size()));
  EXPECT_NEAR(validated, logged, 1e-5) << r.out;

  // A run moved elsewhere (its config still names the old default_root_dir, whose
  // checkpoints are gone): salt's get_best_epoch looks beside the config given.
  const auto moved = dir / "moved" / "GN2_cpu_v";
  fs::create_directories(moved.parent_path());
  fs::copy(run, moved, fs::copy_options::recursive);
  for (const auto& c : checkpoints(run)) fs::remove(c);
  auto m = salt("validate", {"-c", (moved / "config.yaml").string()});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_NE(m.err.find("validating checkpoint " + (moved / "ckpts" / ckpt).string()), std::string::npos) << m.err;
}

// The lines of `salt validate`/`salt test`'s stdout that start with `stage`/, as
// name (without the stage) -> the value as printed.
namespace {
std::map<std::string, std::string> printed_metrics(const std::string& out, const std::string& stage) {
  std::map<std::string, std::string> metrics;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(stage + "/", 0) != 0) continue;
    std::istringstream words(line.substr(stage.size() + 1));
    std::string name, value;
    words >> name >> value;
    metrics[name] = value;
  }
  return metrics;
}
}  // namespace

// Validation and `salt test` share one evaluation step (salt's shared_step forwards
// the labels in both): the test losses of a checkpoint on the validation file are
// its validation losses, task by task, at either precision (before, `salt test`
// forwarded without labels and reported no loss).
TEST_F(FitTest, TestReportsTheValidationLossesOfTheSameFile) {
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "e"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto config = (dir / "logs" / "GN2_cpu_e" / "config.yaml").string();
  for (const std::string precision : {"32", "bf16-mixed"}) {
    SCOPED_TRACE(precision);
    auto val = salt("validate", {"-c", config, "--trainer.precision", precision});
    ASSERT_EQ(val.exit_code, 0) << val.err;
    auto test = salt("test", {"-c", config, "--trainer.precision", precision, "--data.test_file",
                              (dir / "data/toy/pp_output_val.h5").string()});
    ASSERT_EQ(test.exit_code, 0) << test.err;
    const auto validated = printed_metrics(val.out, "val");
    EXPECT_EQ(validated.size(), 4u) << val.out;  // loss, jets_classification, track_origin, track_vertexing
    EXPECT_EQ(printed_metrics(test.out, "test"), validated) << test.out;
    EXPECT_NE(test.out.find("GN2_cpu b-tagging performance"), std::string::npos) << test.out;
  }
}


// Lightning's precision plugin wraps validation and test steps too: `salt validate`
// and `salt test` of a float32 run at bf16-mixed give slightly other numbers (the
// forward ran under bfloat16 autocast), not the float32 ones (before, both loops
// ignored trainer.precision).
TEST_F(FitTest, ValidateAndTestRunAtTheTrainersPrecision) {
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "p"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto config = (dir / "logs" / "GN2_cpu_p" / "config.yaml").string();
  auto val_loss = [&](const std::string& precision) {
    auto r = salt("validate", {"-c", config, "--trainer.precision", precision});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto pos = r.out.find("val/jets_classification_loss");
    EXPECT_NE(pos, std::string::npos) << r.out;
    return pos == std::string::npos ? 0.0 : std::stod(r.out.substr(pos + std::string("val/jets_classification_loss").size()));
  };
  const double full = val_loss("32"), mixed = val_loss("bf16-mixed");
  EXPECT_NE(full, mixed);
  EXPECT_NEAR(full, mixed, 0.02);

  auto test = [&](const std::string& precision, const fs::path& keep) {
    auto r = salt("test", {"-c", config, "--trainer.precision", precision});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto best = training::best_checkpoint(dir / "logs" / "GN2_cpu_p" / "ckpts");
    fs::rename(best.parent_path() / (best.stem().string() + "__test_ttbar.h5"), keep);
  };
  test("32", dir / "full.h5");
  test("bf16-mixed", dir / "mixed.h5");
  auto diff = run_python(R"(
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1])["jets"][:], h5py.File(sys.argv[2])["jets"][:]
cols = [n for n in a.dtype.names if n.startswith("GN2_cpu_p")]
assert cols and all(a.dtype[n] == np.float32 == b.dtype[n] for n in cols), a.dtype
print(max(float(np.abs(a[n].astype("f8") - b[n].astype("f8")).max()) for n in cols))
)",
                         {(dir / "full.h5").string(), (dir / "mixed.h5").string()});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  const double largest = std::stod(diff.out);
  EXPECT_GT(largest, 0.0);
  EXPECT_LT(largest, 0.01);
}

}  // namespace salt::testing

namespace salt::testing {

// salt test draws the rejection curves next to its prediction file and the run's
// loss curves; salt plot redraws the same pictures from the files alone.
TEST_F(FitTest, TestDrawsRejectionAndLossCurvesAndSaltPlotRedrawsThem) {
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "run"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto run = dir / "logs" / "GN2_cpu_run";
  auto r = salt("test", {"-c", (run / "config.yaml").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto best = training::best_checkpoint(run / "ckpts");
  const auto roc = best.parent_path() / (best.stem().string() + "__test_ttbar_roc");
  const std::vector<fs::path> pictures{roc.string() + ".png", roc.string() + ".pdf", run / "loss_curves.png",
                                       run / "loss_curves.pdf"};
  for (const auto& p : pictures) ASSERT_TRUE(fs::exists(p)) << p << "\n" << r.err;
  EXPECT_NE(r.err.find("plot written to " + roc.string() + ".png (and .pdf)"), std::string::npos) << r.err;
  const auto first_png = read_file(pictures[0]);

  for (const auto& p : pictures) fs::remove(p);
  auto again = salt("plot", {run.string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  for (const auto& p : pictures) EXPECT_TRUE(fs::exists(p)) << p << "\n" << again.err;
  EXPECT_EQ(read_file(pictures[0]), first_png) << "the redrawn rejection curves differ";
}

// Bucketed rows (SALT_CPU_BF16_STATIC_ROWS, for LibTorch's own CPU bf16 kernels:
// docs/gpu.md) pad the packed rows of training, validation and `salt test`. A fit
// trains to plain packing's losses but for bf16 rounding, and metadata.yaml says
// which ran; `salt test` writes the same predictions either way (the tracks' too: no
// padding row's output reaches a slot's prediction). On this AVX2 VM they are equal
// bit for bit; a CPU whose bf16 products change order with the row count may differ
// by bf16's rounding, not more.
TEST_F(FitTest, CpuBf16BucketedRowsLeavePredictionsAlone) {
  auto env = [](const std::string& rows) {
    return std::vector<std::string>{"OMP_NUM_THREADS=1", "SALT_CPU_BF16=native", "SALT_CPU_BF16_STATIC_ROWS=" + rows};
  };
  auto val_loss = [](const std::string& log) {
    const auto at = log.rfind("val/loss ");
    return at == std::string::npos ? -1.0 : std::stod(log.substr(at + 9));
  };
  double losses[2];
  for (const std::string rows : {"1", "0"}) {
    auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "1", "--trainer.precision", "bf16-mixed",
                                      "--data.num_train", "500", "--data.num_val", "250", "-ls", "rows" + rows}),
                    env(rows));
    ASSERT_EQ(fit.exit_code, 0) << fit.err;
    losses[rows == "0"] = val_loss(fit.out + fit.err);
    const auto meta = YAML::LoadFile((dir / "logs" / ("GN2_cpu_rows" + rows) / "metadata.yaml").string());
    EXPECT_EQ(meta["step_options"]["cpu_bf16_static_rows"]["value"].as<bool>(), rows == "1");
    EXPECT_EQ(meta["step_options"]["cpu_bf16_static_rows"]["source"].as<std::string>(), "environment");
    // native bf16 steps: the rows are bucketed exactly where asked
    EXPECT_EQ(meta["step_options"]["cpu_bf16_static_rows"]["used"].as<bool>(), rows == "1");
    EXPECT_TRUE(meta["step_options"]["cpu_bf16"]["used"].as<bool>());
  }
  ASSERT_GT(losses[0], 0.0);
  EXPECT_NEAR(losses[0], losses[1], 0.02 * losses[1]);

  const auto run = dir / "logs" / "GN2_cpu_rows1";
  for (const std::string rows : {"1", "0"}) {
    auto test = salt("test",
                     {"-c", (run / "config.yaml").string(), "--data.num_test", "300",
                      "--trainer.callbacks.1.init_args.write_tracks=true"},  // the tracks' slots, padded ones too
                     env(rows));
    ASSERT_EQ(test.exit_code, 0) << test.err;
    const auto best = training::best_checkpoint(run / "ckpts");
    fs::rename(best.parent_path() / (best.stem().string() + "__test_ttbar.h5"), dir / ("rows" + rows + ".h5"));
  }
  auto same = run_python(R"(
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
assert sorted(a) == sorted(b) and "tracks" in a, (list(a), list(b))
worst = 0.0
for k in a:
    x, y = a[k][:], b[k][:]
    for n in x.dtype.names:
        if x.dtype[n].kind == "f":
            assert (np.isnan(x[n]) == np.isnan(y[n])).all(), (k, n)
            worst = max(worst, float(np.nanmax(np.abs(x[n].astype("f8") - y[n].astype("f8")), initial=0.0)))
        else:
            assert (x[n] == y[n]).all(), (k, n)
print(worst)
)",
                         {(dir / "rows1.h5").string(), (dir / "rows0.h5").string()});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_LE(std::stod(same.out), 1e-2) << same.out;
}

}  // namespace salt::testing

namespace salt::testing {

// Before: a directory where the prediction file goes was found only after every
// batch had been predicted.
TEST_F(FitTest, ADirectoryAtThePredictionPathIsRefusedBeforeTesting) {
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "run"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto run = dir / "logs" / "GN2_cpu_run";
  const auto best = training::best_checkpoint(run / "ckpts");
  const auto out = best.parent_path() / (best.stem().string() + "__test_ttbar.h5");
  std::filesystem::create_directories(out);
  auto r = salt("test", {"-c", (run / "config.yaml").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(out.string() + " is a directory, where salt test writes its predictions"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("test/loss"), std::string::npos) << r.err;  // nothing was predicted
}

}  // namespace salt::testing
