// FlopCounter (training/outputs/flop_counter.h) against FLOPs counted by hand:
// 2 m k n per matrix product, a Linear layer's backward two more products of
// the forward's size, salt-cpp's attention kernel 4 n^2 D forward per jet.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>

#include "models/kernels/short_attention.h"
#include "training/outputs/flop_counter.h"

namespace salt::training {
namespace {

TEST(FlopCounter, ALinearLayerCountsItsProductForwardAndTwoBackward) {
  torch::nn::Linear linear(8, 4);
  const auto x = torch::randn({5, 8}, torch::requires_grad());
  double forward = 0, total = 0;
  {
    FlopCounter counter;
    auto y = linear->forward(x);
    forward = counter.flops();
    y.sum().backward();
    total = counter.flops();
  }
  EXPECT_EQ(forward, 2.0 * 5 * 8 * 4);     // x W^T
  EXPECT_EQ(total, 3 * 2.0 * 5 * 8 * 4);  // + dL/dx = g W, dL/dW = g^T x
}

TEST(FlopCounter, BatchedProductsAndTheirShapes) {
  FlopCounter counter;
  (void)torch::bmm(torch::randn({3, 2, 7}), torch::randn({3, 7, 5}));
  EXPECT_EQ(counter.flops(), 2.0 * 3 * 2 * 7 * 5);
  (void)torch::matmul(torch::randn({4, 6, 3}), torch::randn({3, 2}));  // folded into one mm
  EXPECT_EQ(counter.flops(), 2.0 * 3 * 2 * 7 * 5 + 2.0 * 24 * 3 * 2);
  (void)torch::relu(torch::randn({100}));  // elementwise: not counted
  (void)(torch::randn({10}) * 2);
  EXPECT_EQ(counter.flops(), 2.0 * 3 * 2 * 7 * 5 + 2.0 * 24 * 3 * 2);
  EXPECT_EQ(counter.uncounted(), 0);
}

TEST(FlopCounter, SaltsAttentionKernelCountsEachJetsPairs) {
  const int64_t heads = 2, dh = 4, d = heads * dh;
  const auto starts = torch::tensor({0, 3, 3, 8}, torch::kLong);  // jets of 3, 0 and 5 rows
  const auto qkv = torch::randn({8, 3 * d}, torch::requires_grad());
  FlopCounter counter;
  auto out = models::short_varlen_attention(qkv, starts, 5, heads, 0.5);
  const double pairs = 3 * 3 + 5 * 5;
  EXPECT_EQ(counter.flops(), 4 * pairs * d);  // q k^T and p v, every head
  out.sum().backward();
  EXPECT_EQ(counter.flops(), 3 * 4 * pairs * d);
}

TEST(FlopCounter, OneAtATimeAndNothingAfterwards) {
  {
    FlopCounter counter;
    EXPECT_THROW(FlopCounter second, std::logic_error);
  }
  FlopCounter again;  // the first one stopped
  EXPECT_EQ(again.flops(), 0);
}

}  // namespace
}  // namespace salt::training
