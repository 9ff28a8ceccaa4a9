// Determinism on CPU: the same seed and thread count give bitwise identical
// weights and metrics whatever num_workers is, as long as the loader makes its
// iterators as salt's does (one per pass: no workers or no persistent ones; one
// per run: persistent workers, whose batch order therefore differs, as in salt);
// another seed gives other weights; seed_everything: true is seed 0 (Lightning's),
// recorded in config.yaml; a seed beyond 2^32 - 1 is refused, as Lightning does.
#include <yaml-cpp/yaml.h>

#include "training/fit_support.h"
#include "training/checkpoints/checkpoint.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

bool same_weights(const fs::path& a, const fs::path& b) {
  auto x = training::load_checkpoint(a), y = training::load_checkpoint(b);
  if (x.state_dict.size() != y.state_dict.size()) return false;
  for (std::size_t i = 0; i < x.state_dict.size(); ++i)
    if (x.state_dict[i].first != y.state_dict[i].first || !torch::equal(x.state_dict[i].second, y.state_dict[i].second))
      return false;
  return true;
}

// metrics.csv without the wall-clock-free columns being different: the whole file.
std::string metrics(const fs::path& run) { return read_file(run / "metrics.csv"); }

}  // namespace

class Determinism : public FitTest {
 protected:
  fs::path train(const std::string& suffix, std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--trainer.max_epochs", "2", "-ls", suffix});
    auto r = salt("fit", small_gn2(extra));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return dir / "logs" / ("GN2_cpu_" + suffix);
  }
  fs::path last_checkpoint(const fs::path& run) { return checkpoints(run).back(); }
};

TEST_F(Determinism, SameSeedGivesIdenticalWeightsWhateverNumWorkers) {
  auto a = train("a", {"--data.num_workers", "0"});
  auto b = train("b", {"--data.num_workers", "0"});
  auto c = train("c", {"--data.num_workers", "2", "--data.persistent_workers", "false"});
  EXPECT_TRUE(same_weights(last_checkpoint(a), last_checkpoint(b)));
  EXPECT_TRUE(same_weights(last_checkpoint(a), last_checkpoint(c)));
  EXPECT_EQ(metrics(a), metrics(b));
  EXPECT_EQ(metrics(a), metrics(c));
  EXPECT_EQ(checkpoints(a).back().filename(), checkpoints(c).back().filename());
  // Persistent workers: salt's DataLoader draws its base seed once, not per pass.
  auto d = train("d", {"--data.num_workers", "2", "--data.persistent_workers", "true"});
  auto e = train("e", {"--data.num_workers", "3", "--data.persistent_workers", "true"});
  EXPECT_TRUE(same_weights(last_checkpoint(d), last_checkpoint(e)));
  EXPECT_EQ(metrics(d), metrics(e));
  EXPECT_FALSE(same_weights(last_checkpoint(a), last_checkpoint(d)));
}

TEST_F(Determinism, DifferentSeedsGiveDifferentWeights) {
  auto a = train("s1", {"--seed_everything", "1"});
  auto b = train("s2", {"--seed_everything", "2"});
  EXPECT_FALSE(same_weights(last_checkpoint(a), last_checkpoint(b)));
}

TEST_F(Determinism, SeedTrueIsLightningsSeedZeroAndIsRecorded) {
  auto a = train("true", {"--seed_everything", "true"});
  auto config = YAML::LoadFile((a / "config.yaml").string());
  ASSERT_TRUE(config["seed_everything"].IsScalar());
  EXPECT_EQ(config["seed_everything"].as<std::string>(), "0");
  auto zero = train("zero", {"--seed_everything", "0"});
  EXPECT_TRUE(same_weights(last_checkpoint(a), last_checkpoint(zero)));
  // A fresh run from the saved config repeats the run exactly.
  auto r = salt("fit", {"-c", (a / "config.yaml").string(), "-ls", "repeat"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(same_weights(last_checkpoint(a), last_checkpoint(dir / "logs" / "GN2_cpu_repeat")));
}

TEST_F(Determinism, SeedsBeyondLightningsRangeAreRefused) {
  for (const char* seed : {"4294967296", "-1"}) {
    auto r = salt("fit", small_gn2({"--seed_everything", seed, "-ls", "range"}));
    EXPECT_NE(r.exit_code, 0) << seed;
    EXPECT_NE(r.err.find("'seed_everything' " + std::string(seed) + " is out of range: Lightning takes 0 to 4294967295"),
              std::string::npos)
        << r.err;
  }
}

}  // namespace salt::testing

namespace salt::testing {

// Lightning logs salt's train losses on step: each logged row holds that step's own
// batch, not a mean since the last row. Logging less often does not change training,
// so the rows a run logging every 4 steps writes equal those of one logging every step.
TEST_F(Determinism, LoggedTrainLossIsTheStepsOwnBatchAsLightningLogsIt) {
  auto every = train("every", {"--trainer.log_every_n_steps", "1"});
  auto fourth = train("fourth", {"--trainer.log_every_n_steps", "4"});
  std::map<double, std::map<std::string, double>> by_step;
  for (const auto& row : read_metrics(every / "metrics.csv"))
    if (row.count("train/loss")) by_step[row.at("step")] = row;
  int compared = 0;
  for (const auto& row : read_metrics(fourth / "metrics.csv")) {
    if (!row.count("train/loss")) continue;
    ASSERT_TRUE(by_step.count(row.at("step"))) << row.at("step");
    for (const char* key : {"train/loss", "train/jets_classification_loss", "train/track_origin_loss"})
      EXPECT_EQ(row.at(key), by_step[row.at("step")].at(key)) << key << " at step " << row.at("step");
    ++compared;
  }
  EXPECT_GE(compared, 2);
}

}  // namespace salt::testing
