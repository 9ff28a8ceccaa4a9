// The building blocks: Dense layout and context order, InputNorm, InitNet concat order.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "models/layers/activation.h"
#include "models/layers/dense.h"
#include "models/layers/init_net.h"
#include "models/layers/input_norm.h"
#include "models/packing/common.h"

using namespace salt::models;

TEST(Dense, LayoutFollowsSalt) {
  Dense d(DenseOptions(4).output_size(2).hidden_layers(std::vector<int64_t>{6}).dropout(0.1).activation("SiLU").final_activation(
      std::string("Sigmoid")));
  std::vector<std::string> names;
  for (const auto& c : d->net->named_children()) names.push_back(c.key() + ":" + c.value()->name());
  // [Dropout, Linear, act] per hidden layer, [Dropout, Linear, final act] last.
  ASSERT_EQ(names.size(), 6u);
  EXPECT_NE(names[0].find("Dropout"), std::string::npos);
  EXPECT_NE(names[1].find("Linear"), std::string::npos);
  EXPECT_NE(names[2].find("SiLU"), std::string::npos);
  EXPECT_NE(names[5].find("Sigmoid"), std::string::npos);
  // Default hidden layer: input_size * hidden_dim_scale; default output: input_size.
  Dense dflt(DenseOptions(3));
  EXPECT_EQ(dflt->net->named_parameters()["0.weight"].sizes(), (std::vector<int64_t>{6, 3}));
  EXPECT_EQ(dflt->output_size(), 3);
}

TEST(Dense, ContextIsConcatenatedFirst) {
  Dense d(DenseOptions(1).context_size(1).hidden_layers(std::vector<int64_t>{}).output_size(1));
  {
    torch::NoGradGuard ng;
    d->net->named_parameters()["0.weight"].copy_(torch::tensor({{10.0f, 1.0f}}));
    d->net->named_parameters()["0.bias"].zero_();
  }
  // x [B=1, L=2, 1], context [B=1, 1] broadcast over L.
  auto out = d->forward(torch::tensor({2.0f, 3.0f}).view({1, 2, 1}), torch::tensor({{5.0f}}));
  EXPECT_TRUE(torch::allclose(out, torch::tensor({52.0f, 53.0f}).view({1, 2, 1})));
  EXPECT_THROW(d->forward(torch::zeros({1, 2, 1})), salt::UsageError);
  EXPECT_THROW(make_activation("Swish"), salt::UsageError);
}

TEST(InputNorm, NormalisesEverySlot) {
  InputNorm norm(std::map<std::string, NormStats>{{"tracks", {{1.0f, -1.0f}, {2.0f, 4.0f}}}});
  auto buffers = norm->named_buffers();
  EXPECT_TRUE(buffers.contains("tracks_means"));
  EXPECT_TRUE(buffers.contains("tracks_stds"));
  auto x = torch::zeros({1, 2, 2});  // both slots (one would be padded) are normalised
  auto out = norm->forward(TensorMap{{"tracks", x}})["tracks"];
  EXPECT_TRUE(torch::allclose(out, torch::tensor({-0.5f, 0.25f, -0.5f, 0.25f}).view({1, 2, 2})));
  EXPECT_THROW(norm->forward(TensorMap{{"tracks", torch::zeros({1, 2, 3})}}), salt::InputError);
  EXPECT_THROW(norm->forward(TensorMap{{"jets", torch::zeros({1, 2})}}), salt::UsageError);
  EXPECT_THROW(InputNorm(std::map<std::string, NormStats>{{"jets", {{0.0f}, {0.0f}}}}), salt::UsageError);
  EXPECT_THROW(InputNorm(std::map<std::string, NormStats>{{"jets", {{NAN}, {1.0f}}}}), salt::UsageError);
}

TEST(InitNet, GlobalVariablesComeFirst) {
  InitNet net(InitNetOptions("tracks", "jets", DenseOptions(3).hidden_layers(std::vector<int64_t>{}).output_size(3)));
  {
    torch::NoGradGuard ng;
    net->net->net->named_parameters()["0.weight"].copy_(torch::eye(3));
    net->net->net->named_parameters()["0.bias"].zero_();
  }
  TensorMap inputs{{"jets", torch::tensor({{9.0f}})}, {"tracks", torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({1, 2, 2})}};
  auto out = net->forward(inputs);
  EXPECT_TRUE(torch::allclose(out, torch::tensor({9.0f, 1.0f, 2.0f, 9.0f, 3.0f, 4.0f}).view({1, 2, 3})));
  EXPECT_THROW(net->forward(TensorMap{{"tracks", inputs["tracks"]}}), salt::InputError);
}

// salt's dropout on constituents draws for the padded [B, L, D] tensor. On packed
// rows (the valid slots), salt-cpp's Dense draws the same mask and keeps the valid
// rows' part: the same values as torch's own Dropout on the padded tensor, and the
// generator left where it leaves it (later draws, the next epoch's batch order).
TEST(Dense, DropoutOnPackedRowsDrawsAsOnThePaddedTensor) {
  Dense d(DenseOptions(3).output_size(2).hidden_layers(std::vector<int64_t>{5}).dropout(0.3).context_size(2));
  d->train();
  torch::manual_seed(1);
  const auto x = torch::randn({2, 4, 3});
  const auto context = torch::randn({2, 2});
  auto pad = torch::tensor({false, false, true, true, false, true, false, false}).view({2, 4});
  const auto idx = TokenIndex::from_mask(pad);

  torch::manual_seed(5);
  const auto padded = d->forward(x, context);
  const auto after_padded = torch::rand({4});
  torch::manual_seed(5);
  const auto rows = d->forward(idx.gather(x), context.index_select(0, idx.jet), &idx);
  const auto after_rows = torch::rand({4});
  EXPECT_TRUE(torch::equal(rows, idx.gather(padded)));
  EXPECT_TRUE(torch::equal(after_rows, after_padded));
  torch::manual_seed(5);
  EXPECT_TRUE(torch::equal(d->forward_gathered(idx.gather(x), context, idx.jet, &idx), idx.gather(padded)));

  // Without the layout the rows draw their own (smaller) mask: another generator state.
  torch::manual_seed(5);
  d->forward(idx.gather(x), context.index_select(0, idx.jet));
  EXPECT_FALSE(torch::equal(torch::rand({4}), after_padded));
  // In eval mode nothing is drawn.
  d->eval();
  torch::manual_seed(5);
  EXPECT_TRUE(torch::equal(d->forward(idx.gather(x), context.index_select(0, idx.jet), &idx),
                           idx.gather(d->forward(x, context))));
}
