// A run's pictures from real files: a prediction file written with HDF5 and a
// metrics.csv as the trainer writes it; bad inputs give one error naming them.
#include "plot/run_plots.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/errors.h"
#include "data/h5_file.h"
#include "plot/loss_curves.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;
namespace h5 = data::h5;

// jets with a label and one tagger's probabilities: b jets get a high pb. Without a
// tagger the probabilities are named as no tagger's (`GN2_b`); without b jets every
// third jet is a c jet instead.
void write_predictions(const fs::path& path, bool with_truth, bool with_tagger = true, bool with_b = true) {
  h5::CompoundBuilder builder;
  if (with_truth) builder.add("HadronConeExclTruthLabelID", h5::kI4);
  if (with_tagger) builder.add("GN2_pb", h5::kF4).add("GN2_pc", h5::kF4).add("GN2_pu", h5::kF4);
  else builder.add("GN2_b", h5::kF4).add("GN2_c", h5::kF4).add("GN2_u", h5::kF4);
  const auto layout = builder.layout();
  const auto type = builder.build();
  const hsize_t n = 600;
  std::vector<uint8_t> records(n * layout.record_size);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0, 1);
  for (hsize_t i = 0; i < n; ++i) {
    uint8_t* r = records.data() + i * layout.record_size;
    const int32_t label = i % 3 == 0 ? (with_b ? 5 : 4) : i % 3 == 1 ? 4 : 0;
    float pb = u(rng), pc = u(rng), pu = u(rng);
    if (label == 5) pb += 1.0f;
    const float sum = pb + pc + pu;
    const float p[3] = {pb / sum, pc / sum, pu / sum};
    std::size_t f = 0;
    if (with_truth) std::memcpy(r + layout.fields[f++].offset, &label, 4);
    for (float v : p) std::memcpy(r + layout.fields[f++].offset, &v, 4);
  }
  auto file = h5::File::create(path);
  {
    auto d = h5::create_dataset(file, "jets", type.get(), {{n}, {}, h5::Compression::None}, layout.record_size);
    d.write_records(0, n, records.data());
  }
  file.close();
}

const char* kMetrics =
    "epoch,step,lr-AdamW,train/jets_loss,train/loss,val/jets_loss,val/loss\n"
    "0,50,0.001,1.2,2.5,,\n"
    "0,100,0.001,1.0,2.1,,\n"
    "0,100,,,,1.1,2.2\n"
    "1,150,0.0005,0.9,1.9,,\n"
    "1,200,,,,0.95,1.95\n";

TEST(RunPlots, PredictionFileGivesRejectionCurvesNextToIt) {
  TempDir dir;
  const auto pred = dir / "epoch=001-val_loss=1.95000__test_ttbar.h5";
  write_predictions(pred, true);
  const auto files = plot::plot_predictions(pred);
  EXPECT_EQ(files, (std::vector<fs::path>{dir / "epoch=001-val_loss=1.95000__test_ttbar_roc.png",
                                          dir / "epoch=001-val_loss=1.95000__test_ttbar_roc.pdf"}));
  for (const auto& f : files) EXPECT_GT(fs::file_size(f), 1000u) << f;
}

TEST(RunPlots, PredictionFileWithoutTruthIsOneErrorNamingIt) {
  TempDir dir;
  const auto pred = dir / "p.h5";
  write_predictions(pred, false);
  try {
    plot::plot_predictions(pred);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), pred.string() + ": 'jets' has no HadronConeExclTruthLabelID, so the flavours are unknown");
  }
  EXPECT_FALSE(fs::exists(dir / "p_roc.png"));
}

TEST(RunPlots, PredictionFileWithoutTaggerOrBJetsIsOneErrorNamingIt) {
  TempDir dir;
  const auto no_tagger = dir / "no_tagger.h5", no_b = dir / "no_b.h5";
  write_predictions(no_tagger, true, false);
  write_predictions(no_b, true, true, false);
  auto error_of = [](const fs::path& f) -> std::string {
    try {
      plot::plot_predictions(f);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of(no_tagger), no_tagger.string() + ": no tagger in 'jets' (no <tagger>_pb/_pc/_pu fields)");
  EXPECT_EQ(error_of(no_b), no_b.string() + ": no b jets (HadronConeExclTruthLabelID 5) to plot against");
  EXPECT_FALSE(fs::exists(dir / "no_tagger_roc.png"));
  EXPECT_FALSE(fs::exists(dir / "no_b_roc.png"));
}

TEST(RunPlots, LossFigureHasTrainLinesAndValidationPoints) {
  TempDir dir;
  write_file(dir / "metrics.csv", kMetrics);
  const auto fig = plot::loss_figure(plot::read_metrics_csv(dir / "metrics.csv"), {});
  ASSERT_EQ(fig.series.size(), 4u);  // train/val of the total, then of jets_loss
  EXPECT_EQ(fig.series[0].label, "train loss");
  EXPECT_EQ(fig.series[0].x, (std::vector<double>{50, 100, 150}));
  EXPECT_EQ(fig.series[0].y, (std::vector<double>{2.5, 2.1, 1.9}));
  EXPECT_EQ(fig.series[1].label, "val loss");
  EXPECT_TRUE(fig.series[1].markers && fig.series[1].dashed);
  EXPECT_EQ(fig.series[1].x, (std::vector<double>{100, 200}));
  EXPECT_EQ(fig.series[1].y, (std::vector<double>{2.2, 1.95}));
  EXPECT_EQ(fig.series[3].label, "val jets_loss");
  EXPECT_EQ(fig.series[2].colour.r, fig.series[3].colour.r);  // a task's train and val share a colour
}

TEST(RunPlots, PlotRunDrawsLossesAndEveryPredictionFile) {
  TempDir dir;
  write_file(dir / "metrics.csv", kMetrics);
  fs::create_directories(dir / "ckpts");
  write_predictions(dir / "ckpts" / "a__test_ttbar.h5", true);
  write_predictions(dir / "ckpts" / "a__test_zprime.h5", true);
  const auto files = plot::plot_run(dir.path());
  EXPECT_EQ(files.size(), 6u);
  for (const char* f : {"loss_curves.png", "loss_curves.pdf", "ckpts/a__test_ttbar_roc.png", "ckpts/a__test_zprime_roc.pdf"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
}

TEST(RunPlots, MalformedMetricsNameTheLine) {
  TempDir dir;
  write_file(dir / "metrics.csv", "epoch,step,train/loss\n0,50,1.5\n0,100,abc\n");
  try {
    plot::plot_run(dir.path());
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "metrics.csv").string() + ":3: 'abc' is not a number");
  }
  EXPECT_FALSE(fs::exists(dir / "loss_curves.png"));
}

TEST(RunPlots, SaltPlotOnADirectoryThatIsNoRunIsOneLine) {
  TempDir dir;
  auto r = run_salt({"plot", dir.path().string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(dir.path().string() + ": not a run directory (no metrics.csv)"), std::string::npos) << r.err;
}

// A run that has just started: metrics.csv holds its header and no loss yet.
TEST(RunPlots, SaltPlotOfARunThatLoggedNoLossYetIsOneLine) {
  TempDir dir;
  write_file(dir / "metrics.csv", "epoch,step,train/lr\n0,0,1e-07\n");
  auto r = run_salt({"plot", dir.path().string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find((dir / "metrics.csv").string() + ": no loss was logged yet"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "loss_curves.png"));
}

}  // namespace
}  // namespace salt::testing
