// salt.models.FeaturewiseTransformation (FiLM) and SaltModel's featurewise_nets.
// Expected values by hand: scale_net and bias_net are single Linear(1 -> 2) layers
// with set weights, so scale(p) = p * w + b is exact arithmetic.
#include <gtest/gtest.h>

#include "support/one_line_error.h"

#include "models/layers/featurewise.h"
#include "models/model_factory.h"
#include "models/model_test_helpers.h"

namespace salt::models {
namespace {

Featurewise two_linear_nets(bool apply_norm) {
  auto one_layer = DenseOptions(-1).hidden_layers(std::vector<int64_t>{}).output_size(2);
  Featurewise f(FeaturewiseOptions().dense_config_scale(one_layer).dense_config_bias(one_layer).apply_norm(apply_norm), 1);
  torch::NoGradGuard ng;
  auto sp = f->scale_net->named_parameters();
  sp["net.0.weight"].copy_(torch::tensor({1.0f, 2.0f}).view({2, 1}));
  sp["net.0.bias"].copy_(torch::tensor({0.5f, -1.0f}));
  auto bp = f->bias_net->named_parameters();
  bp["net.0.weight"].copy_(torch::tensor({0.0f, 1.0f}).view({2, 1}));
  bp["net.0.bias"].copy_(torch::tensor({1.0f, 1.0f}));
  return f;
}

TEST(Featurewise, ScalesAndShiftsEachJetsConstituents) {
  auto f = two_linear_nets(false);
  const auto p = torch::tensor({2.0f, 3.0f}).view({2, 1});
  const auto x = torch::tensor({1.0f, 1.0f, 2.0f, -1.0f, 0.0f, 1.0f, 1.0f, 1.0f}).view({2, 2, 2});
  // scale: jet 0 [2.5, 3], jet 1 [3.5, 5]; shift: jet 0 [1, 3], jet 1 [1, 4].
  const auto expected = torch::tensor({3.5f, 6.0f, 6.0f, 0.0f, 1.0f, 9.0f, 4.5f, 9.0f}).view({2, 2, 2});
  EXPECT_TRUE(torch::allclose(f->forward(p, x), expected)) << f->forward(p, x);
  // Packed rows with their jet's parameters give the same rows.
  const auto rows = f->forward(p.index_select(0, torch::tensor({0, 0, 1, 1})), x.view({4, 2}));
  EXPECT_TRUE(torch::allclose(rows, expected.view({4, 2})));
}

TEST(Featurewise, ApplyNormIsTorchsAffineLayerNorm) {
  auto f = two_linear_nets(true);
  const auto out = f->forward(torch::tensor({2.0f}).view({1, 1}), torch::tensor({1.0f, 1.0f}).view({1, 1, 2}));
  // [3.5, 6] normalised over 2 features: mean 4.75, var 1.5625 (+1e-5) -> -/+ 1.25 / sqrt(1.56251).
  const float v = static_cast<float>(1.25 / std::sqrt(1.5625 + 1e-5));
  EXPECT_TRUE(torch::allclose(out, torch::tensor({-v, v}).view({1, 1, 2}))) << out;
  EXPECT_EQ(f->norm->named_parameters().size(), 2u);  // weight and bias, as nn.LayerNorm
}

ModelContext parameterised_context(bool with_parameters) {
  ModelContext ctx;
  ctx.variables = {{"jets", {"pt", "eta"}}, {"tracks", {"d0", "z0", "phi"}}};
  if (with_parameters) ctx.variables["parameters"] = {"mass"};
  ctx.norm["jets"] = NormStats{{0, 0}, {1, 1}};
  ctx.norm["tracks"] = NormStats{{0, 0, 0}, {1, 1, 1}};
  ctx.class_names = [](const std::string&, const std::string&) {
    return std::optional<std::vector<std::string>>(std::vector<std::string>{"bjets", "cjets"});
  };
  return ctx;
}

std::string model_yaml(const std::string& featurewise) {
  return "class_path: salt.models.SaltModel\n"
         "init_args:\n"
         "  init_nets: [{input_name: tracks, dense_config: {output_size: 8, hidden_layers: [8]}}]\n"
         "  featurewise_nets: " + featurewise + "\n"
         "  encoder: {class_path: salt.models.Transformer, init_args: {num_layers: 2, embed_dim: 8, out_dim: 4,"
         "            attn_kwargs: {num_heads: 2}}}\n"
         "  pool_net: {class_path: salt.models.GlobalAttentionPooling, init_args: {input_size: 4}}\n"
         "  tasks: {class_path: torch.nn.ModuleList, init_args: {modules: [{class_path: salt.models.ClassificationTask,"
         "    init_args: {name: j, input_name: jets, label: flavour_label, loss: torch.nn.CrossEntropyLoss,"
         "    dense_config: {input_size: 4, output_size: 2}}}]}}\n";
}

TEST(Featurewise, ModelKeysAndParametersAsSalts) {
  const auto fw =
      "[{layer: input, dense_config_scale: {hidden_layers: [], output_size: 5}},"
      " {layer: encoder, apply_norm: true, dense_config_bias: {hidden_layers: [], output_size: 8}},"
      " {layer: global, dense_config_scale: {hidden_layers: [], output_size: 4}}]";
  auto w = build_model(YAML::Load(model_yaml(fw)), parameterised_context(true));
  std::set<std::string> keys;
  for (const auto& p : w->named_parameters()) keys.insert(p.key());
  for (const char* k : {"model.featurewise_global.scale_net.net.0.weight", "model.init_nets.0.featurewise.scale_net.net.0.weight",
                        "model.encoder.featurewise.0.bias_net.net.0.bias", "model.encoder.featurewise.1.norm.weight"})
    EXPECT_TRUE(keys.count(k)) << k;
  // Featurewise on the input: the init net reads 3 + 2 features, the parameter is not concatenated.
  EXPECT_EQ(w->model->init_net_list()[0]->net->input_size(), 5);
  const auto x = torch::randn({3, 4, 3});
  TensorMap inputs{{"jets", torch::randn({3, 2})}, {"tracks", x}, {"parameters", torch::tensor({5.0f, 40.0f, 55.0f}).view({3, 1})}};
  TensorMap masks{{"tracks", torch::tensor({false, false, true, true}).repeat({3, 1})}};
  auto out = w->model->forward(inputs, masks);
  EXPECT_TRUE(torch::isfinite(out.global_rep).all().item<bool>());
  // Another parameter value changes the output (the nets are not inert).
  inputs["parameters"] = torch::tensor({6.0f, 41.0f, 56.0f}).view({3, 1});
  EXPECT_FALSE(torch::allclose(w->model->forward(inputs, masks).global_rep, out.global_rep));
}

TEST(Featurewise, ConcatenatedParametersWithoutFeaturewiseNets) {
  auto w = build_model(YAML::Load(model_yaml("null")), parameterised_context(true));
  EXPECT_EQ(w->model->init_net_list()[0]->net->input_size(), 6);  // 3 track + 2 jet + 1 parameter
}

TEST(Featurewise, BadConfigsAreOneLine) {
  auto msg = salt::testing::one_line_error_of<UsageError>([&] {
    build_model(YAML::Load(model_yaml("[{layer: global, dense_config_scale: {output_size: 4}}]")), parameterised_context(false));
  });
  EXPECT_NE(msg.find("model.model.init_args.featurewise_nets: featurewise nets need parameters (data.variables.parameters)"),
            std::string::npos)
      << msg;
  msg = salt::testing::one_line_error_of<UsageError>([&] {
    build_model(YAML::Load(model_yaml("[{layer: input, dense_config_bias: {output_size: 7}}]")), parameterised_context(true));
  });
  EXPECT_NE(msg.find("featurewise_nets[0]: output_size 7 must equal the 5 input features of init net 'tracks'"),
            std::string::npos)
      << msg;
  msg = salt::testing::one_line_error_of<UsageError>([&] {
    build_model(YAML::Load(model_yaml("[{layer: encoder, dense_config_scale: {output_size: 6}}]")), parameterised_context(true));
  });
  EXPECT_NE(msg.find("featurewise_nets[0]: output_size 6 must equal the 8 features of the encoder layers"), std::string::npos)
      << msg;
  msg = salt::testing::one_line_error_of<UsageError>([&] {
    build_model(YAML::Load(model_yaml("[{layer: global, dense_config_scale: {output_size: 4}, dense_config_bias: {output_size: 8}}]")),
                parameterised_context(true));
  });
  EXPECT_NE(msg.find("featurewise_nets[0]: dense_config_scale and dense_config_bias need the same output_size"),
            std::string::npos)
      << msg;
  msg = salt::testing::one_line_error_of<UsageError>([&] {
    build_model(YAML::Load(model_yaml("[{layer: encoder}]")), parameterised_context(true));
  });
  EXPECT_NE(msg.find("featurewise_nets[0]: give dense_config_scale, dense_config_bias or both"), std::string::npos) << msg;
}

}  // namespace
}  // namespace salt::models
