// muP end to end as a salt user runs it: `salt mup` on a config with
// model.mup_config writes the base shapes from its two proxies, `salt fit` trains
// the full-width model with them and `salt test` writes predictions; a shapes file
// that does not match the model, or none, is one line and leaves no run behind.
#include <gtest/gtest.h>

#include "training/checkpoints/checkpoint.h"
#include "training/fit_support.h"

namespace salt::testing {
namespace {

// GN2_cpu in muP at width 128, from proxies at 64 (base) and 16 (delta).
const char* kMupOverlay = R"(
model:
  mup_config:
    shape_path: shapes
    embed_dim:
      apply_to: [init_nets, encoder]
      parameter_name: [output_size, embed_dim]
      parameter_base: 64
      parameter_delta: 16
  model:
    init_args:
      init_nets:
        - input_name: tracks
          dense_config: { output_size: 128, hidden_layers: [64], activation: ReLU, mup: true }
      encoder:
        init_args: { embed_dim: 128, mup: true }
)";

class MupFit : public FitTest {
 protected:
  std::vector<std::string> mup_args(std::vector<std::string> extra = {}) {
    write_file(dir / "mup.yaml", kMupOverlay);
    auto args = small_gn2({"-c", (dir / "mup.yaml").string(), "--trainer.max_epochs", "1"});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

TEST_F(MupFit, ShapesFromTheProxiesThenFitAndTest) {
  auto r = salt("mup", mup_args());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto shapes = read_file(dir / "shapes" / "storeshapes");
  // proxies at 64 and 16: the base width 64 marks every width dimension
  EXPECT_NE(shapes.find("encoder.layers.0.attn.fn.in_proj_weight:\n- 192\n- 64\n"), std::string::npos) << shapes;
  EXPECT_NE(shapes.find("encoder.out_proj.weight:\n- null\n- 64\n"), std::string::npos) << shapes;
  EXPECT_NE(shapes.find("pool_net.gate_nn.weight:\n- null\n- null\n"), std::string::npos) << shapes;
  EXPECT_TRUE(runs().empty()) << "salt mup made a run directory";

  r = salt("fit", mup_args({"--force"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(runs().size(), 1u);
  const auto config = read_file(runs()[0] / "config.yaml");
  EXPECT_NE(config.find("mup_config:"), std::string::npos);
  r = salt("test", {"--config", (runs()[0] / "config.yaml").string(), "--data.num_workers", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  bool predictions = false;
  for (const auto& e : std::filesystem::directory_iterator(runs()[0] / "ckpts"))
    predictions |= e.path().string().find("__test_") != std::string::npos;
  EXPECT_TRUE(predictions);
  // The ONNX graph divides the readout's input by the width multiplier (2) too:
  // ONNX Runtime agrees with salt-cpp.
  r = salt("to_onnx", {"--ckpt_path", checkpoints(runs()[0]).front().string(), "--require_check", "--force",
                       "--check_jets", "100"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("ONNX Runtime vs salt-cpp on 103 test jets"), std::string::npos) << r.out << r.err;
}

// Resuming a muP run rebuilds MuAdamW's groups and the schedule factor: the
// result equals the uninterrupted run's, bitwise (one thread, as FitTest's resume test).
TEST_F(MupFit, ResumingContinuesExactlyLikeAnUninterruptedRun) {
  ASSERT_EQ(salt("mup", mup_args()).exit_code, 0);
  auto a = salt("fit", mup_args({"--force", "--trainer.max_epochs", "3", "-ls", "A", "--data.num_workers", "0"}));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto run_a = dir / "logs" / "GN2_cpu_A";
  const auto ckpts_a = checkpoints(run_a);
  ASSERT_EQ(ckpts_a.size(), 3u);
  auto b = salt("fit", {"-c", (run_a / "config.yaml").string(), "--ckpt_path", ckpts_a[0].string(), "-ls", "B",
                        "--data.num_workers", "0", "--force"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const auto final_a = training::load_checkpoint(ckpts_a[2]);
  const auto final_b = training::load_checkpoint(checkpoints(dir / "logs" / "GN2_cpu_B").back());
  EXPECT_EQ(final_a.global_step, final_b.global_step);
  ASSERT_EQ(final_a.state_dict.size(), final_b.state_dict.size());
  for (std::size_t i = 0; i < final_a.state_dict.size(); ++i)
    EXPECT_TRUE(torch::equal(final_a.state_dict[i].second, final_b.state_dict[i].second)) << final_a.state_dict[i].first;
}

TEST_F(MupFit, AMismatchedOrMissingShapesFileIsOneLineAndLeavesNothing) {
  // shapes written for a 3-layer encoder, a fit of the 2-layer one
  auto r = salt("mup", mup_args({"--model.model.init_args.encoder.init_args.num_layers", "3"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = salt("fit", mup_args({"--force"}));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("the base shapes in shapes/storeshapes do not match the model: "
                       "'encoder.layers.2.attn.fn.in_proj_weight' is not a parameter of the model"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(runs().empty());

  r = salt("fit", mup_args({"--force", "--model.mup_config.shape_path", "elsewhere"}));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("no base shapes file elsewhere/storeshapes (write it with `salt mup`"), std::string::npos) << r.err;
  EXPECT_TRUE(runs().empty());

  // salt mup without mup_config, or a width that is not in the model: one line, no file
  r = salt("mup", small_gn2());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("salt mup: the config has no model.mup_config"), std::string::npos) << r.err;
  r = salt("mup", mup_args({"--model.mup_config.shape_path", "other", "--model.mup_config.embed_dim.parameter_name",
                            "[output_size, width]"}));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("'width' in model.model.init_args.encoder: key not found"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "other"));

  // a malformed mup_config: usage errors before anything is built or written
  r = salt("mup", mup_args({"--model.mup_config.shape_path", "other", "--model.mup_config.embed_dim.parameter_delta",
                            "64"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("parameter_base and parameter_delta must differ (their difference marks the width)"),
            std::string::npos)
      << r.err;
  r = salt("mup", mup_args({"--model.mup_config.shape_path", "other", "--model.mup_config.embed_dim.parameter_name",
                            "[output_size]"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("give one parameter_name per apply_to entry (2"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "other"));

  // muP's learning rates are AdamW's (salt's MuAdamW): another optimizer is refused, no run made.
  const auto before = runs().size();
  r = salt("fit", mup_args({"--force", "--model.optimizer", "lion"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("model.mup_config: muP needs model.optimizer AdamW (salt's MuAdamW), not lion"), std::string::npos)
      << r.err;
  EXPECT_EQ(runs().size(), before);
}

}  // namespace
}  // namespace salt::testing
