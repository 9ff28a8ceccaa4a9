// salt.models.NodeQueryGAP. Expected values: salt's forward (models/pooling.py)
// transcribed and evaluated with /usr/bin/python3's torch 1.13 on the weights below.
#include <gtest/gtest.h>

#include "support/one_line_error.h"

#include "models/model_factory.h"
#include "models/layers/node_query_gap.h"
#include "models/model_test_helpers.h"

namespace salt::models {
namespace {

TEST(NodeQueryGAP, PoolsNodesAndQueriesAsSalt) {
  NodeQueryGAP pool(2);
  {
    torch::NoGradGuard ng;
    pool->gate_nn_1->weight.copy_(torch::tensor({1.0f, -0.5f}).view({1, 2}));
    pool->gate_nn_1->bias.fill_(0.1f);
    pool->gate_nn_2->weight.copy_(torch::tensor({0.3f, 0.7f}).view({1, 2}));
    pool->gate_nn_2->bias.fill_(-0.2f);
  }
  const auto nodes = torch::tensor({1.0f, 2.0f, 0.5f, -1.0f, 3.0f, 3.0f}).view({1, 3, 2});
  const auto pad = torch::tensor({false, false, true}).view({1, 3});
  const auto queries = torch::tensor({0.2f, 0.4f, -1.0f, 1.0f}).view({1, 2, 2});
  const auto out = pool->forward(nodes, pad, queries);
  const auto expected = torch::tensor({0.6344707f, -0.1931757f, -0.3107277f, 0.5270525f}).view({1, 4});
  EXPECT_TRUE(torch::allclose(out, expected, 0, 1e-6)) << out;
}

TEST(NodeQueryGAP, RefusedWithoutAMaskDecoder) {
  const auto yaml =
      "class_path: salt.models.SaltModel\n"
      "init_args:\n"
      "  init_nets: [{input_name: tracks, dense_config: {output_size: 4}}]\n"
      "  pool_net: {class_path: salt.models.NodeQueryGAP, init_args: {input_size: 4}}\n"
      "  tasks: {class_path: torch.nn.ModuleList, init_args: {modules: [{class_path: salt.models.ClassificationTask,"
      "    init_args: {name: j, input_name: jets, label: flavour_label, class_names: [b, c],"
      "    loss: torch.nn.CrossEntropyLoss, dense_config: {output_size: 2}}}]}}\n";
  ModelContext ctx;
  ctx.variables = {{"jets", {"pt"}}, {"tracks", {"d0"}}};
  ctx.norm["jets"] = NormStats{{0}, {1}};
  ctx.norm["tracks"] = NormStats{{0}, {1}};
  const auto msg = salt::testing::one_line_error_of<UsageError>([&] { build_model(YAML::Load(yaml), ctx); });
  EXPECT_NE(msg.find("model.model.init_args.pool_net.class_path: salt.models.NodeQueryGAP pools a MaskFormer decoder's "
                     "object queries; it needs model.model.init_args.mask_decoder"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace salt::models
