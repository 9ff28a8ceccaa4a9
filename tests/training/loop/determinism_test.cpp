// Determinism on CPU: the same seed and thread count give bitwise identical
// weights and metrics whatever num_workers is; another seed gives other weights;
// seed_everything: true records the seed it drew, so the run can be repeated.
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
  auto c = train("c", {"--data.num_workers", "2"});
  EXPECT_TRUE(same_weights(last_checkpoint(a), last_checkpoint(b)));
  EXPECT_TRUE(same_weights(last_checkpoint(a), last_checkpoint(c)));
  EXPECT_EQ(metrics(a), metrics(b));
  EXPECT_EQ(metrics(a), metrics(c));
  EXPECT_EQ(checkpoints(a).back().filename(), checkpoints(c).back().filename());
}

TEST_F(Determinism, DifferentSeedsGiveDifferentWeights) {
  auto a = train("s1", {"--seed_everything", "1"});
  auto b = train("s2", {"--seed_everything", "2"});
  EXPECT_FALSE(same_weights(last_checkpoint(a), last_checkpoint(b)));
}

TEST_F(Determinism, DrawnSeedIsRecordedAndRepeats) {
  auto a = train("drawn", {"--seed_everything", "true"});
  auto config = YAML::LoadFile((a / "config.yaml").string());
  ASSERT_TRUE(config["seed_everything"].IsScalar());
  const auto seed = config["seed_everything"].as<std::string>();
  EXPECT_NE(seed, "true");
  EXPECT_NO_THROW(std::stoull(seed));
  // A fresh run from the saved config draws nothing and repeats the run exactly.
  auto r = salt("fit", {"-c", (a / "config.yaml").string(), "-ls", "repeat"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(same_weights(last_checkpoint(a), last_checkpoint(dir / "logs" / "GN2_cpu_repeat")));
}

}  // namespace salt::testing
