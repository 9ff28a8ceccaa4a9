// salt's LayerNorm written in a half type (models/kernels/norm_cast.h): the kernel's
// lane maths run on the CPU against values worked by hand (and checked with Python
// torch 1.13) and against LibTorch's layer_norm and cast; the card's kernel is held
// to the same maths in tests/gpu.
#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.h"
#include "core/torch_compat.h"
#include "models/kernels/norm_cast.h"
#include "models/layers/norm.h"

namespace salt::models {
namespace {

// One row 1, 2, 3, 4: mean 2.5, variance 1.25, 1 / std 1 / sqrt(1.25 + 1e-5) =
// 0.894423; normed -1.341635, -0.447212, 0.447212, 1.341635, which bf16 (steps of
// 2^-7 above 1, 2^-9 below 0.5) rounds to -1.34375, -0.447265625, ... and half
// (steps of 2^-10, 2^-12) to -1.341796875, -0.447265625, ...
TEST(NormCast, OneRowByHand) {
  const auto x = torch::tensor({{1.f, 2.f, 3.f, 4.f}});
  const auto bf16 = layer_norm_cast(x, torch::kBFloat16);
  ASSERT_EQ(bf16.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(bf16.to(torch::kFloat), torch::tensor({{-1.34375f, -0.447265625f, 0.447265625f, 1.34375f}})));
  const auto half = layer_norm_cast(x, torch::kHalf);
  ASSERT_EQ(half.scalar_type(), torch::kHalf);
  EXPECT_TRUE(torch::equal(half.to(torch::kFloat),
                           torch::tensor({{-1.341796875f, -0.447265625f, 0.447265625f, 1.341796875f}})));
}

// The gradient of that row for dy = (1, 0, 0, 0): rstd (dy - mean(dy) - xhat
// mean(dy xhat)) = 0.894423 ((1, 0, 0, 0) - 0.25 + 0.335409 xhat), in float32.
TEST(NormCast, OneRowsGradientByHand) {
  const auto x = torch::tensor({{1.f, 2.f, 3.f, 4.f}}).requires_grad_(true);
  auto y = layer_norm_cast(x, torch::kBFloat16);
  y.backward(torch::tensor({{1.f, 0.f, 0.f, 0.f}}).to(torch::kBFloat16));
  ASSERT_EQ(x.grad().scalar_type(), torch::kFloat);
  const auto want = torch::tensor({{0.26833022f, -0.35776842f, -0.08944345f, 0.17888153f}});
  EXPECT_TRUE(torch::allclose(x.grad(), want, 1e-6, 1e-7)) << x.grad();
}

// Random rows of GN2's width (256), of fewer columns than a warp's lanes (24), and
// of lanes that take 7 and 6 columns (200): the forward is LibTorch's layer_norm
// and cast to within one unit of the half type (the float32 sums are added in
// another order, which may move a value across a rounding boundary; LibTorch 1.13
// and 2.6 sum in orders of their own), the gradient LibTorch's through the cast to
// within float32 rounding.
TEST(NormCast, TheKernelsMathsFollowLibTorchsNormAndCast) {
  torch::manual_seed(3);
  for (const int64_t d : {256, 24, 200}) {
    for (const auto type : {torch::kBFloat16, torch::kHalf}) {
      const std::string what = std::string(c10::toString(type)) + ", " + std::to_string(d) + " columns";
      const auto rows = torch::randn({700, d}) * 3 + 1.5;
      const auto upstream = torch::randn({700, d}).to(type);
      auto x = rows.clone().requires_grad_(true);
      auto y = layer_norm_cast(x, type);
      y.backward(upstream);
      auto xr = rows.clone().requires_grad_(true);
      auto want = layer_norm_cast_reference(xr, type);
      want.backward(upstream);
      ASSERT_EQ(want.scalar_type(), type);
      // One unit of the half type, relative; near 0, where x - mean cancels, what a
      // float32 mean's rounding leaves (about 1e-7 of the row's values) decides.
      const double unit = type == torch::kBFloat16 ? 1.0 / 128 : 1.0 / 1024;
      EXPECT_TRUE(torch::allclose(y.to(torch::kFloat), want.to(torch::kFloat), unit, 1e-6)) << what;
      EXPECT_GT(torch::eq(y, want).to(torch::kFloat).mean().item<double>(), 0.999) << what;
      const double rel = ((x.grad() - xr.grad()).norm() / xr.grad().norm()).item<double>();
      EXPECT_LT(rel, 1e-5) << what;
    }
  }
}

// A row of equal values has variance 0: eps keeps 1 / std finite and the row is 0,
// as LibTorch's; no rows at all is no work.
TEST(NormCast, AConstantRowAndNoRows) {
  const auto y = layer_norm_cast(torch::full({2, 40}, 7.f), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(y.to(torch::kFloat), torch::zeros({2, 40})));
  EXPECT_EQ(layer_norm_cast(torch::zeros({0, 16}), torch::kHalf).sizes(), (std::vector<int64_t>{0, 16}));
}

TEST(NormCast, RefusesWhatItDoesNotTake) {
  EXPECT_THROW(layer_norm_cast(torch::randn({3, 8}).to(torch::kBFloat16), torch::kBFloat16), UsageError);
  EXPECT_THROW(layer_norm_cast(torch::randn({3, 8}), torch::kFloat), UsageError);
  EXPECT_THROW(layer_norm_cast(torch::randn({2, 3, 8}), torch::kBFloat16), UsageError);
}

// Off a card the norm of a pre-norm layer stays LibTorch's in float32, asked for
// the kernel or not, under CPU bf16 autocast too: the same tensor as forward().
TEST(NormCast, OffACardTheNormStaysLibTorchs) {
  Norm norm("LayerNorm", 32);
  const auto x = torch::randn({50, 32});
  EXPECT_FALSE(layer_norm_for_product(x, true).defined());
  const auto plain = norm->forward(x);
  for (const bool kernel : {false, true}) {
    EXPECT_TRUE(torch::equal(norm->forward_for_product(x, kernel), plain));
    torch::Tensor under_autocast;
    {
      compat::AutocastGuard bf16(torch::kCPU, torch::kBFloat16);
      under_autocast = norm->forward_for_product(x, kernel);
    }
    EXPECT_EQ(under_autocast.scalar_type(), torch::kFloat);
    EXPECT_TRUE(torch::equal(under_autocast, plain));
  }
}

}  // namespace
}  // namespace salt::models
