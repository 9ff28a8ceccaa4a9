// salt.models.PositionalEncoder, and as an init net's pos_enc. Expected values:
// salt's posenc.py transcribed and evaluated with /usr/bin/python3's torch 1.13
// (float64) for variables [deta, phi], dim 13, alpha 1.
#include <gtest/gtest.h>

#include "support/one_line_error.h"

#include "models/model_factory.h"
#include "models/layers/pos_enc.h"
#include "models/model_test_helpers.h"

namespace salt::models {
namespace {

TEST(PositionalEncoder, SaltsEncodingWithPeriodicPhiAndZeroPadding) {
  PositionalEncoder pe(PositionalEncoderOptions().variables({"deta", "phi"}).dim(13).alpha(1));
  const auto x = torch::tensor({0.5, 1.0, -2.0, 3.0}, torch::kFloat64).view({2, 2});
  const auto expected = torch::tensor(
      {0.4794255, 0.1075135, 0.0232059, 0.8775826, 0.9942036, 0.9997307, 0.7456241, 0.1802980, 0.0390477, 0.5143953,
       0.1161419, 0.0250760, 0.0, -0.9092974, -0.4176768, -0.0926985, -0.4161468, 0.9085957, 0.9956942, 0.1406521,
       0.0303987, 0.0065502, -0.8360219, -0.2116740, -0.0459352, 0.0},
      torch::kFloat64).view({2, 13});
  const auto out = pe(x);
  EXPECT_TRUE(torch::allclose(out, expected, 0, 1e-6)) << out - expected;
}

std::string model_yaml(const std::string& pos_enc) {
  return "class_path: salt.models.SaltModel\n"
         "init_args:\n"
         "  init_nets: [{input_name: tracks, attach_global: false, pos_enc: " + pos_enc + ",\n"
         "               dense_config: {output_size: 8, hidden_layers: [8]}}]\n"
         "  pool_net: {class_path: salt.models.GlobalAttentionPooling, init_args: {input_size: 8}}\n"
         "  tasks: {class_path: torch.nn.ModuleList, init_args: {modules: [{class_path: salt.models.ClassificationTask,"
         "    init_args: {name: j, input_name: jets, label: flavour_label, class_names: [b, c],"
         "    loss: torch.nn.CrossEntropyLoss, dense_config: {input_size: 8, output_size: 2}}}]}}\n";
}

ModelContext context() {
  ModelContext ctx;
  ctx.variables = {{"jets", {"pt"}}, {"tracks", {"d0", "deta", "dphi"}}};
  ctx.norm["jets"] = NormStats{{0}, {1}};
  ctx.norm["tracks"] = NormStats{{0, 0, 0}, {1, 1, 1}};
  return ctx;
}

TEST(PositionalEncoder, AddedToTheInitNetOutput) {
  auto w = build_model(
      YAML::Load(model_yaml("{class_path: salt.models.PositionalEncoder, init_args: {variables: [dphi, deta], dim: 8}}")),
      context());
  auto net = w->model->init_net_list()[0];
  ASSERT_TRUE(net->pos_enc.has_value());
  EXPECT_EQ(net->named_parameters().size(), w->model->init_net_list()[0]->net->named_parameters().size());
  const auto x = torch::randn({2, 3, 3});
  const auto with = net->forward({{"tracks", x}});
  const auto plain = net->net->forward(x);
  const auto cols = torch::tensor({2, 1});  // dphi, deta
  EXPECT_TRUE(torch::allclose(with - plain, (*net->pos_enc)(x.index_select(-1, cols)), 1e-5, 1e-6));
}

TEST(PositionalEncoder, BadConfigsNameTheKey) {
  auto msg = salt::testing::one_line_error_of<UsageError>([] {
    build_model(YAML::Load(model_yaml("{class_path: salt.models.PositionalEncoder, init_args: {variables: [eta], dim: 8}}")),
                context());
  });
  EXPECT_NE(msg.find("init_nets[0].pos_enc.init_args.variables: 'eta' is not a variable of 'tracks'"), std::string::npos) << msg;
  msg = salt::testing::one_line_error_of<UsageError>([] {
    build_model(YAML::Load(model_yaml("{class_path: salt.models.PositionalEncoder, init_args: {variables: [deta], dim: 6}}")),
                context());
  });
  EXPECT_NE(msg.find("init_nets[0].pos_enc.init_args.dim: 6 must equal the init net's output_size 8"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace salt::models
