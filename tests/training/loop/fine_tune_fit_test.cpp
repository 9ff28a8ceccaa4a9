// Fine-tuning (init_from): a new training from another run's weights, some of them
// frozen, on real fits of the small GN2.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <map>

#include "training/checkpoints/checkpoint.h"
#include "training/fit_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

class FineTuneFit : public FitTest {
 protected:
  // The run's checkpoint of its last epoch, or of epoch `wanted`.
  static fs::path last_checkpoint(const fs::path& run, int64_t wanted = -1) {
    fs::path best;
    int64_t epoch = -1;
    for (const auto& c : checkpoints(run)) {
      const auto e = training::load_checkpoint(c).epoch;
      if (e == wanted) return c;
      if (e > epoch) epoch = e, best = c;
    }
    return wanted < 0 ? best : fs::path();
  }

  static std::map<std::string, torch::Tensor> weights(const fs::path& ckpt) {
    const auto state = training::load_checkpoint(ckpt).state_dict;
    return {state.begin(), state.end()};
  }

  // The source run every case fine-tunes from: one epoch of the small GN2.
  fs::path source() {
    auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "1", "--data.num_train", "1000", "-ls", "source"}));
    EXPECT_EQ(fit.exit_code, 0) << fit.err;
    return last_checkpoint(dir / "logs" / "GN2_cpu_source");
  }

  // A new jets head (another hidden layer: other shapes), as when a GN2 encoder seeds another tagger.
  static std::vector<std::string> new_head() {
    return {"--model.model.init_args.tasks.init_args.modules.0.init_args.dense_config.hidden_layers", "[16]"};
  }

  void write_init_from(const fs::path& ckpt, const std::string& extra) {
    write_file(dir / "tune.yaml", "init_from:\n  ckpt_path: " + ckpt.string() + "\n" + extra);
  }
};

bool frozen_key(const std::string& key) {
  return key.rfind("model.init_nets.", 0) == 0 || key.rfind("model.encoder.", 0) == 0;
}

// The frozen encoder and init nets end the fine-tuning as the source left them, bit
// for bit, with no optimizer state; the pooling taken from the source trains on; the
// new head (excluded, other shapes) starts fresh. config.yaml stays salt's (no
// init_from), metadata.yaml records it, and a resume from that config.yaml keeps
// the parameters frozen, which the checkpoint records.
TEST_F(FineTuneFit, FrozenPartsKeepTheSourceWeightsAndAResumeKeepsThemFrozen) {
  const auto src = source();
  ASSERT_FALSE(src.empty());
  write_init_from(src, "  exclude: ['^model\\.tasks\\.0\\.']\n  freeze: ['^model\\.init_nets\\.', '^model\\.encoder\\.']\n");
  auto args = small_gn2({"-c", (dir / "tune.yaml").string(), "--trainer.max_epochs", "2", "--data.num_train", "1000",
                         "-ls", "tuned"});
  const auto head = new_head();
  args.insert(args.end(), head.begin(), head.end());
  auto tune = salt("fit", args);
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  const auto log = tune.out + tune.err;
  EXPECT_NE(log.find("init_from " + src.string() + ": "), std::string::npos) << log;
  EXPECT_NE(log.find("frozen: "), std::string::npos) << log;

  const auto tuned = dir / "logs" / "GN2_cpu_tuned";
  const auto before = weights(src);
  const auto after_ckpt = last_checkpoint(tuned, 0);
  const auto ck = training::load_checkpoint(last_checkpoint(tuned));
  ASSERT_EQ(ck.epoch, 1);
  int frozen = 0, trained = 0, new_shapes = 0;
  int64_t frozen_values = 0;
  for (std::size_t i = 0; i < ck.state_dict.size(); ++i) {
    const auto& [key, value] = ck.state_dict[i];
    const auto& was = before.at(key);
    if (frozen_key(key)) {
      ++frozen;
      EXPECT_TRUE(torch::equal(value, was)) << key << " changed although frozen";
      if (i < ck.adam_state.size()) {
        EXPECT_FALSE(ck.adam_state[i].exp_avg.defined()) << key << " has optimizer state although frozen";
        frozen_values += value.numel();
      }
    } else if (value.sizes() != was.sizes()) {
      ++new_shapes;
    } else if (key.rfind("model.pool_net.", 0) == 0 && !torch::equal(value, was)) {
      ++trained;
    }
  }
  EXPECT_GT(frozen, 10);
  EXPECT_GT(trained, 0) << "the pooling taken from the source did not train";
  EXPECT_GT(new_shapes, 0) << "the new head has the source's shapes";
  EXPECT_NE(log.find("Non-trainable params (" + std::to_string(frozen_values) + ")"), std::string::npos) << log;

  EXPECT_EQ(read_file(tuned / "config.yaml").find("init_from"), std::string::npos);
  const auto meta = YAML::LoadFile((tuned / "metadata.yaml").string());
  EXPECT_GT(meta["init_from"]["tensors_taken"].as<int>(), 10);
  EXPECT_GT(meta["init_from"]["tensors_left"].as<int>(), 0);
  EXPECT_EQ(meta["init_from"]["frozen_values"].as<int64_t>(), frozen_values);

  // Its second epoch again, from the first's checkpoint and the run's own config.yaml:
  // still frozen, and the same weights as the uninterrupted run.
  auto resumed = salt("fit", {"-c", (tuned / "config.yaml").string(), "--trainer.max_epochs", "2", "-ls", "resumed",
                              "--ckpt_path", after_ckpt.string()});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto end = training::load_checkpoint(last_checkpoint(dir / "logs" / "GN2_cpu_resumed"));
  EXPECT_EQ(end.epoch, 1);
  ASSERT_EQ(end.state_dict.size(), ck.state_dict.size());
  for (std::size_t i = 0; i < end.state_dict.size(); ++i) {
    const auto& [key, value] = end.state_dict[i];
    if (frozen_key(key)) EXPECT_TRUE(torch::equal(value, before.at(key))) << key << " changed after the resume";
    EXPECT_TRUE(torch::equal(value, ck.state_dict[i].second)) << key << " differs from the uninterrupted run";
  }

  // Resuming with other frozen parameters than the run's: one line.
  write_init_from(src, "  freeze: ['^model\\.encoder\\.']\n");
  auto other = salt("fit", {"-c", (tuned / "config.yaml").string(), "-c", (dir / "tune.yaml").string(),
                            "--trainer.max_epochs", "2", "-ls", "other", "--ckpt_path", after_ckpt.string()});
  EXPECT_NE(other.exit_code, 0);
  EXPECT_EQ(error_lines(other.err), 1) << other.err;
  EXPECT_NE(other.err.find("its run froze [^model\\.init_nets\\., ^model\\.encoder\\.]"), std::string::npos)
      << other.err;
}

// What cannot be taken is one line naming the tensor or the pattern, before any run
// directory is made; salt's own checkpoint layout seeds a run as salt-cpp's does.
TEST_F(FineTuneFit, RefusalsNameTheTensorOrPatternAndSaltsCheckpointSeedsARun) {
  ASSERT_TRUE(have_python_module("torch")) << "python3-torch missing";
  const auto src = source();
  ASSERT_FALSE(src.empty());
  const auto refused = [&](const std::string& yaml, const std::vector<std::string>& extra, const std::string& says) {
    write_init_from(src, yaml);
    auto args = small_gn2({"-c", (dir / "tune.yaml").string(), "--trainer.max_epochs", "1", "-ls", "refused"});
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = salt("fit", args);
    EXPECT_NE(r.exit_code, 0) << yaml;
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "logs" / "GN2_cpu_refused" / "config.yaml"));
  };
  refused("", new_head(), "'model.tasks.0.net.net.0.weight' has shape [32, 32] but the model expects [16, 32]");
  refused("  include: ['^model\\.encodr\\.']\n", {}, "'init_from.include.0': '^model\\.encodr\\.' matches no state key");
  refused("  freeze: ['pool', 'nothing_here']\n", {}, "'init_from.freeze.1': 'nothing_here' matches no parameter");

  // A checkpoint lacking one of the tensors taken (a source of another model).
  const auto fewer = dir / "fewer.ckpt";
  auto r = run_python(R"(
import sys, torch
ck = torch.load(sys.argv[1], weights_only=False)
del ck["state_dict"]["model.pool_net.gate_nn.weight"]
torch.save(ck, sys.argv[2])
)",
                      {src.string(), fewer.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  write_file(dir / "fewer.yaml", "init_from: " + fewer.string() + "\n");
  auto missing = salt("fit", small_gn2({"-c", (dir / "fewer.yaml").string(), "-ls", "fewer"}));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(error_lines(missing.err), 1) << missing.err;
  EXPECT_NE(missing.err.find("init_from takes 'model.pool_net.gate_nn.weight', which the checkpoint lacks (1 missing)"),
            std::string::npos) << missing.err;

  // salt's layout (Python's torch.save of Lightning's dict): the encoder taken and frozen.
  const auto salt_ckpt = dir / "salt.ckpt";
  r = run_python(read_file(source_dir() / "tests" / "zoo" / "as_salt_writes_it.py"),
                 {src.string(), salt_ckpt.string(), "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  write_init_from(salt_ckpt, "  include: ['^model\\.encoder\\.']\n  freeze: ['^model\\.encoder\\.']\n");
  auto seeded = salt("fit", small_gn2({"-c", (dir / "tune.yaml").string(), "--trainer.max_epochs", "1",
                                       "--data.num_train", "500", "-ls", "seeded"}));
  ASSERT_EQ(seeded.exit_code, 0) << seeded.err;
  const auto before = weights(src);
  int encoder = 0;
  for (const auto& [key, value] : weights(last_checkpoint(dir / "logs" / "GN2_cpu_seeded")))
    if (key.rfind("model.encoder.", 0) == 0) {
      ++encoder;
      EXPECT_TRUE(torch::equal(value, before.at(key))) << key;
    }
  EXPECT_GT(encoder, 10);
}

}  // namespace
}  // namespace salt::testing
