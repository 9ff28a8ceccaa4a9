// The terminal of a real fit and test (batch-log form: stderr is not a terminal):
// the epoch summaries carry the mean train loss and the logged validation losses,
// the bar's figures equal the logged ones, the whole run has an ETA, salt test
// shows progress.
#include <regex>

#include "training/fit_support.h"

namespace salt::testing {
namespace {

// The "mean loss" of the last progress line of `stage` and `epoch` ("val epoch 0/2 step 2/2 ...").
double last_bar_loss(const std::string& err, const std::string& prefix) {
  const std::regex line(prefix + R"( step (\d+)/(\d+) mean loss ([0-9.]+))");
  double loss = -1;
  for (std::sregex_iterator it(err.begin(), err.end(), line), end; it != end; ++it) loss = std::stod((*it)[3]);
  return loss;
}

TEST_F(FitTest, TerminalSummariesAndBarAgreeWithTheLoggedLosses) {
  // 8 steps of 250 jets per epoch, each logged (Lightning logs each step's batch):
  // the mean of an epoch's rows is the epoch's mean train loss.
  auto r = salt("fit", small_gn2({"--trainer.enable_progress_bar", "true", "--trainer.max_epochs", "2",
                                  "--trainer.log_every_n_steps", "1", "-ls", "bar"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<double> train(2, 0.0), val;
  int rows = 0;
  for (const auto& row : read_metrics(dir / "logs" / "GN2_cpu_bar" / "metrics.csv")) {
    if (row.count("train/loss")) train[static_cast<size_t>(row.at("epoch"))] += row.at("train/loss") / 8, ++rows;
    if (row.count("val/loss")) val.push_back(row.at("val/loss"));
  }
  ASSERT_EQ(rows, 16);
  ASSERT_EQ(val.size(), 2u);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::string e = "epoch " + std::to_string(epoch) + "/2";
    // The train summary's mean equals the logged train/loss of that epoch.
    std::smatch m;
    const std::regex summary("train " + e + R"( done in \d+:\d\d:\d\d: mean train loss ([0-9.]+), step )" +
                             std::to_string(8 * (epoch + 1)));
    ASSERT_TRUE(std::regex_search(r.err, m, summary)) << r.err;
    EXPECT_NEAR(std::stod(m[1]), train[epoch], 5e-5);
    EXPECT_NEAR(last_bar_loss(r.err, "train " + e), train[epoch], 5e-5);
    // The validation bar ends on the logged val/loss, and its summary names it.
    EXPECT_NEAR(last_bar_loss(r.err, "val " + e), val[epoch], 5e-5);
    const std::regex val_summary("val " + e + R"( done in [^:]+:\d\d:\d\d: .*val/loss ([0-9.]+))");
    ASSERT_TRUE(std::regex_search(r.err, m, val_summary)) << r.err;
    EXPECT_NEAR(std::stod(m[1]), val[epoch], 1e-6);
  }
  // Every training line has the stage's and the whole run's ETA.
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(train epoch 0/2 step 8/8 .* ETA \d+:\d\d:\d\d run \d+:\d\d:\d\d)")))
      << r.err;

  auto t = salt("test", {"-c", (dir / "logs" / "GN2_cpu_bar" / "config.yaml").string()});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  // salt test computes validation's losses (evaluation_step): its bar ends on the
  // mean it prints as test/loss, then rate and ETA.
  EXPECT_TRUE(std::regex_search(t.err, std::regex(R"(test step 2/2 mean loss [0-9.]+ [0-9.]+k? jets/s ETA \d+:\d\d:\d\d\n)")))
      << t.err;
  std::smatch printed;
  ASSERT_TRUE(std::regex_search(t.out, printed, std::regex(R"(test/loss\s+([0-9.]+))"))) << t.out;
  EXPECT_NEAR(last_bar_loss(t.err, "test"), std::stod(printed[1]), 5e-5);
  EXPECT_NE(t.err.find(": 500 jets"), std::string::npos) << t.err;
}

}  // namespace
}  // namespace salt::testing
