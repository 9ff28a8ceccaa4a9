// What each stage of a fit cost (training/loop/epoch_resources.h): one log line per
// stage and metadata.yaml's `resources`, rewritten after every stage: wall time,
// the part spent waiting for the loader, peak host RSS, peak GPU memory (null on
// the CPU), the attention kernels the model ran and the float32 matmul precision.
#include <yaml-cpp/yaml.h>

#include "training/fit_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

TEST_F(FitTest, EveryStageReportsItsTimeDataWaitAndPeakMemory) {
  // No loader threads: every batch is read while the loop waits, so the wait is real.
  auto r = salt("fit", small_gn2({"--trainer.max_epochs", "2", "--data.num_workers", "0"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(runs().size(), 1u);
  auto meta = YAML::LoadFile((runs()[0] / "metadata.yaml").string());
  EXPECT_EQ(meta["float32_matmul_precision"].as<std::string>(), "highest");  // "medium" only on CUDA
  auto res = meta["resources"];
  ASSERT_TRUE(res.IsMap()) << r.err;
  auto stages = res["stages"];
  ASSERT_EQ(stages.size(), 4u);
  const char* order[][2] = {{"train", "0"}, {"val", "0"}, {"train", "1"}, {"val", "1"}};
  double peak = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    auto s = stages[i];
    EXPECT_EQ(s["stage"].as<std::string>(), order[i][0]) << i;
    EXPECT_EQ(s["epoch"].as<std::string>(), order[i][1]) << i;
    const double seconds = s["seconds"].as<double>(), wait = s["data_wait_seconds"].as<double>();
    EXPECT_GT(seconds, 0.0) << i;
    EXPECT_GT(wait, 0.0) << i;  // synchronous loading is waited for
    EXPECT_LE(wait, seconds) << i;
    EXPECT_GT(s["peak_host_rss_mb"].as<double>(), 10.0) << i;
    EXPECT_TRUE(s["peak_gpu_allocated_mb"].IsNull()) << i;
    peak = std::max(peak, s["peak_host_rss_mb"].as<double>());
    // the same figures in the log, one line per stage
    const std::string line = std::string(order[i][0]) + " epoch " + order[i][1] + ": ";
    const auto at = r.err.find(line);
    ASSERT_NE(at, std::string::npos) << line << "\n" << r.err;
    EXPECT_NE(r.err.find("waiting for data", at), std::string::npos);
    EXPECT_NE(r.err.find("peak host RSS", at), std::string::npos);
  }
  EXPECT_DOUBLE_EQ(res["peak_host_rss_mb"].as<double>(), peak);
  EXPECT_TRUE(res["peak_gpu_allocated_mb"].IsNull());
  // GN2_cpu's encoder on the CPU in float32: salt-cpp's varlen kernel on packed rows.
  ASSERT_EQ(res["attention_kernels"].size(), 1u);
  EXPECT_NE(res["attention_kernels"][0].as<std::string>().find("varlen"), std::string::npos)
      << res["attention_kernels"][0].as<std::string>();
}

}  // namespace
}  // namespace salt::testing
