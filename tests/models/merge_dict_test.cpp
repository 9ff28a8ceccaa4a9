// SaltModel's merge_dict: constituent types concatenated into one input that tasks
// name; labels merged alike, predictions split back to the members for the files.
#include <gtest/gtest.h>

#include "support/one_line_error.h"

#include "data/batch.h"
#include "models/model_factory.h"
#include "models/model_test_helpers.h"

namespace salt::models {
namespace {

std::string model_yaml(const std::string& merge, const std::string& constituent_task_input) {
  std::string y =
      "class_path: salt.models.SaltModel\n"
      "init_args:\n"
      "  init_nets: [{input_name: tracks, dense_config: {output_size: 8}},\n"
      "              {input_name: electrons, dense_config: {output_size: 8}}]\n"
      "  merge_dict: " + merge + "\n"
      "  encoder: {class_path: salt.models.Transformer, init_args: {num_layers: 1, embed_dim: 8, attn_kwargs: {num_heads: 2}}}\n"
      "  pool_net: {class_path: salt.models.GlobalAttentionPooling, init_args: {input_size: 8}}\n"
      "  tasks: {class_path: torch.nn.ModuleList, init_args: {modules: [\n"
      "    {class_path: salt.models.ClassificationTask, init_args: {name: j, input_name: jets, label: flavour_label,"
      "     class_names: [b, c], loss: torch.nn.CrossEntropyLoss, dense_config: {output_size: 2}}}";
  if (!constituent_task_input.empty())
    y += ",\n    {class_path: salt.models.ClassificationTask, init_args: {name: o, input_name: " + constituent_task_input +
         ", label: origin, class_names: [x, y, z], loss: torch.nn.CrossEntropyLoss, dense_config: {output_size: 3}}}";
  return y + "]}}\n";
}

ModelContext context() {
  ModelContext ctx;
  ctx.variables = {{"jets", {"pt"}}, {"tracks", {"d0", "z0"}}, {"electrons", {"e", "eta", "phi"}}};
  ctx.norm["jets"] = NormStats{{0}, {1}};
  ctx.norm["tracks"] = NormStats{{0, 0}, {1, 1}};
  ctx.norm["electrons"] = NormStats{{0, 0, 0}, {1, 1, 1}};
  return ctx;
}

TEST(MergeDict, TasksReadTheMergedInputAndPredictionsGoBackToTheMembers) {
  auto merged = build_model(YAML::Load(model_yaml("{constituents: [tracks, electrons]}", "constituents")), context());
  auto plain = build_model(YAML::Load(model_yaml("null", "")), context());
  // No parameters of its own: the plain model takes the merged one's weights.
  {
    torch::NoGradGuard ng;
    auto src = merged->named_parameters();
    for (auto& p : plain->named_parameters()) p.value().copy_(src[p.key()]);
  }
  auto labels = merged->required_labels();
  EXPECT_EQ(labels.at("tracks"), std::vector<std::string>{"origin"});
  EXPECT_EQ(labels.at("electrons"), std::vector<std::string>{"origin"});
  EXPECT_FALSE(labels.count("constituents"));

  Batch b;
  b.inputs = {{"jets", torch::randn({2, 1})}, {"tracks", torch::randn({2, 3, 2})}, {"electrons", torch::randn({2, 2, 3})}};
  b.pad_masks = {{"tracks", torch::tensor({false, false, true, false, true, true}).view({2, 3})},
                 {"electrons", torch::tensor({false, true, true, true}).view({2, 2})}};
  b.labels["jets"]["flavour_label"] = torch::tensor({0, 1});
  b.labels["tracks"]["origin"] = torch::tensor({0, 1, 2, 2, 0, 0}).view({2, 3});
  b.labels["electrons"]["origin"] = torch::tensor({1, 0, 0, 0}).view({2, 2});
  merged->eval();
  plain->eval();
  const auto out = merged->forward(b.inputs, b.pad_masks, &b.labels);
  // Attention and pooling do not depend on the order of the tokens.
  EXPECT_TRUE(torch::allclose(out.global_rep, plain->forward(b.inputs, b.pad_masks).global_rep, 1e-5, 1e-6));
  // The merged task: 3 + 2 slots; its loss is CE over the valid merged slots.
  const auto& logits = out.preds.at("constituents").at("o");
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{2, 5, 3}));
  const auto y = torch::cat({b.labels["tracks"]["origin"], b.labels["electrons"]["origin"]}, 1);
  const auto valid = torch::cat({b.pad_masks["tracks"], b.pad_masks["electrons"]}, 1).logical_not();
  const auto ce = torch::nn::functional::cross_entropy(logits.index({valid}), y.index({valid}));
  EXPECT_NEAR(out.losses.at("o").item<double>(), ce.item<double>(), 1e-6);

  const auto cols = merged->predictions(out, b.pad_masks);
  ASSERT_TRUE(cols.count("tracks") && cols.count("electrons"));
  EXPECT_FALSE(cols.count("constituents"));
  const auto all = cols.at("tracks").at("o").values;
  EXPECT_EQ(all.size(1), 3);
  EXPECT_EQ(cols.at("electrons").at("o").values.size(1), 2);
  EXPECT_TRUE(torch::allclose(cols.at("electrons").at("o").values.index({0, 0}),
                              torch::softmax(logits.index({0, 3}), -1)));
}

TEST(MergeDict, BadConfigsNameTheKey) {
  const std::string key = "model.model.init_args.merge_dict.";
  auto msg = salt::testing::one_line_error_of<UsageError>(
      [] { build_model(YAML::Load(model_yaml("{c: [tracks, muons]}", "c")), context()); });
  EXPECT_NE(msg.find(key + "c: 'muons' is not a constituent type with an init net"), std::string::npos) << msg;
  msg = salt::testing::one_line_error_of<UsageError>(
      [] { build_model(YAML::Load(model_yaml("{c: [tracks], d: [tracks, electrons]}", "c")), context()); });
  EXPECT_NE(msg.find(key + "d: 'tracks' is merged twice"), std::string::npos) << msg;
  msg = salt::testing::one_line_error_of<UsageError>(
      [] { build_model(YAML::Load(model_yaml("{tracks: [tracks, electrons]}", "tracks")), context()); });
  EXPECT_NE(msg.find(key + "tracks: the merged name must not be an input of data.variables"), std::string::npos) << msg;
  msg = salt::testing::one_line_error_of<UsageError>(
      [] { build_model(YAML::Load(model_yaml("{c: [tracks, electrons]}", "tracks")), context()); });
  EXPECT_NE(msg.find("reads 'tracks', which is neither the global object nor an init net input"), std::string::npos) << msg;
}

}  // namespace
}  // namespace salt::models
