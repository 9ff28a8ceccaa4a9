// ThroughputMonitor on a real fit of the small GN2: Lightning's metric names in
// metrics.csv at each logging step, totals that add up to the epoch's jets and
// valid tracks (counted with h5py in the training file), rates once the window
// is full, and the same FLOPs per batch behind every row's flops_per_sec.
#include <cmath>

#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

TEST_F(FitTest, ThroughputMonitorLogsJetsTracksAndFlopsPerSecond) {
  SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed (scripts/bootstrap.sh installs it)");
  auto r = salt("fit", small_gn2({"--trainer.max_epochs", "1", "--trainer.log_every_n_steps", "4", "-ls", "tp",
                                  "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.ThroughputMonitor, "
                                  "init_args: {batch_size_fn: null, window_size: 3}}"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto tracks = run_python(R"(
import sys, h5py
print(int(h5py.File(sys.argv[1])["tracks"]["valid"][:2000].sum()))
)",
                           {(dir / "data/toy/pp_output_train.h5").string()});
  ASSERT_EQ(tracks.exit_code, 0) << tracks.err;
  const double valid_tracks = std::stod(tracks.out);

  std::vector<std::map<std::string, double>> logged;
  for (const auto& row : read_metrics(dir / "logs" / "GN2_cpu_tp" / "metrics.csv"))
    if (row.count("train/batches")) logged.push_back(row);
  ASSERT_EQ(logged.size(), 2u);  // steps 4 and 8 of the epoch's 8
  EXPECT_EQ(logged[0].at("step"), 3);  // Lightning's label: the steps before the batch's
  EXPECT_EQ(logged[1].at("step"), 7);
  EXPECT_EQ(logged[0].at("train/batches"), 4);
  EXPECT_EQ(logged[0].at("train/samples"), 1000);
  EXPECT_EQ(logged[1].at("train/samples"), 2000);
  EXPECT_EQ(logged[1].at("train/lengths"), valid_tracks);  // every training jet's valid tracks, once
  EXPECT_LT(logged[0].at("train/lengths"), valid_tracks);
  EXPECT_GT(logged[1].at("train/time"), logged[0].at("train/time"));
  std::vector<double> flops_per_batch;
  for (const auto& row : logged) {
    for (const char* rate : {"batches_per_sec", "samples_per_sec", "items_per_sec", "flops_per_sec"})
      ASSERT_GT(row.at(std::string("train/device/") + rate), 0) << rate;
    // 250 jets a batch: the window's jets over its time, as its batches
    EXPECT_NEAR(row.at("train/device/samples_per_sec") / row.at("train/device/batches_per_sec"), 250, 1e-3);
    flops_per_batch.push_back(row.at("train/device/flops_per_sec") / row.at("train/device/batches_per_sec"));
    EXPECT_FALSE(row.count("train/device/mfu"));       // no peak for a CPU
    EXPECT_FALSE(row.count("train/samples_per_sec"));  // one process: the device's figures only
  }
  EXPECT_NEAR(flops_per_batch[0], flops_per_batch[1], 1e-6 * flops_per_batch[0]);
  // At least the track init net's two products forward and backward: 3 x 2 x (F x 64 + 64 x 64) per track.
  EXPECT_GT(flops_per_batch[0], 3 * 2 * (64.0 * 64) * (valid_tracks / 8) * 0.5);
}

}  // namespace salt::testing
