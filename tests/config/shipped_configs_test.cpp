// Our configs (equivalents of salt's base.yaml, GN2/GN2.yaml, legacy/dips.yaml,
// legacy/DL1.yaml, written with salt's keys) compose, validate, and print a
// config that reads back to the same thing.
#include <gtest/gtest.h>

#include "config/config_test_util.h"
#include "config/yaml_load.h"

namespace salt::testing {
namespace {

class ShippedConfig : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(ShippedConfig, ResolvesWithoutWarningsAndRoundTrips) {
  std::vector<std::string> args;
  for (const auto& f : GetParam()) {
    args.push_back("-c");
    args.push_back(repo_config(f));
  }
  auto first = resolve_args(args);
  EXPECT_TRUE(first.warnings.empty());
  // --print_config output, read back with no base: the same resolved config.
  TempDir dir;
  write_file(dir / "config.yaml", config::to_yaml(first.config));
  auto second = resolve_args({"-c", (dir / "config.yaml").string()}, "");
  EXPECT_EQ(config::to_yaml(second.config), config::to_yaml(first.config));
}

INSTANTIATE_TEST_SUITE_P(Configs, ShippedConfig,
                         ::testing::Values(std::vector<std::string>{"GN2.yaml"}, std::vector<std::string>{"dips.yaml"},
                                           std::vector<std::string>{"DL1.yaml"}, std::vector<std::string>{"MaskFormer.yaml"},
                                           std::vector<std::string>{"GN2.yaml", "GN2_cpu.yaml"}));

TEST(ShippedConfigs, GN2MatchesSalt) {
  auto c = resolve_args({"-c", repo_config("GN2.yaml")}).config;
  auto salt_model = c["model"]["model"]["init_args"];
  EXPECT_EQ(c["data"]["variables"]["tracks"].size(), 19u);
  EXPECT_EQ(c["data"]["variables"]["jets"].size(), 2u);
  EXPECT_EQ(salt_model["encoder"]["init_args"]["embed_dim"].as<int>(), 256);
  EXPECT_EQ(salt_model["encoder"]["init_args"]["num_layers"].as<int>(), 4);
  EXPECT_EQ(salt_model["encoder"]["init_args"]["attn_kwargs"]["num_heads"].as<int>(), 8);
  auto tasks = salt_model["tasks"]["init_args"]["modules"];
  EXPECT_EQ(tasks[1]["init_args"]["dense_config"]["output_size"].as<int>(), 8);     // merge key + override
  EXPECT_EQ(tasks[1]["init_args"]["dense_config"]["context_size"].as<int>(), 128);  // merge key + alias
  EXPECT_EQ(tasks[2]["init_args"]["weight"].as<double>(), 1.5);
  EXPECT_EQ(c["data"]["batch_size"].as<int>(), 4000);
  EXPECT_EQ(c["trainer"]["max_epochs"].as<int>(), 40);
  EXPECT_EQ(c["model"]["lrs_config"]["end"].as<double>(), 1e-5);  // GN2 overrides base
  EXPECT_EQ(c["model"]["lrs_config"]["last_epoch"].as<int>(), -1);  // from base
}

TEST(ShippedConfigs, CpuVariantShrinksGN2ButKeepsItsStructure) {
  auto c = resolve_args({"-c", repo_config("GN2.yaml"), "-c", repo_config("GN2_cpu.yaml")}).config;
  auto m = c["model"]["model"]["init_args"];
  EXPECT_EQ(m["encoder"]["class_path"].Scalar(), "salt.models.Transformer");
  EXPECT_EQ(m["encoder"]["init_args"]["embed_dim"].as<int>(), 64);
  EXPECT_EQ(m["encoder"]["init_args"]["do_final_norm"].Scalar(), "true");  // kept from GN2
  EXPECT_EQ(m["tasks"]["init_args"]["modules"].size(), 3u);
  EXPECT_EQ(c["name"].Scalar(), "GN2_cpu");
}

TEST(ShippedConfigs, DipsKeepsLabelMapWithIntKeys) {
  auto c = resolve_args({"-c", repo_config("dips.yaml")}).config;
  auto task = c["model"]["model"]["init_args"]["tasks"]["init_args"]["modules"][0]["init_args"];
  EXPECT_EQ(yaml_of(task["label_map"]), "{0: 0, 4: 1, 5: 2, 15: 3}");
  EXPECT_EQ(yaml_of(task["loss"]), yaml_of(config::parse_cli_value(
                                       "{class_path: torch.nn.CrossEntropyLoss, init_args: {weight: null, size_average: "
                                       "null, ignore_index: -100, reduce: null, reduction: mean, label_smoothing: 0.0}}")));
  EXPECT_TRUE(c["model"]["model"]["init_args"]["encoder"].IsNull());
}

}  // namespace
}  // namespace salt::testing
