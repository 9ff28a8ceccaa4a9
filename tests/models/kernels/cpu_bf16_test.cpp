// The emulated bf16 matrix products (models/kernels/cpu_bf16.h) against the exact bf16
// result (the bf16 inputs multiplied in double, rounded once) and LibTorch's own bf16
// kernels on the same inputs: bf16 results, exact or one bf16 step off, never
// further off than LibTorch's kernel; gradients alike; and the dispatcher back to
// LibTorch's kernels once the emulation ends.
#include "models/kernels/cpu_bf16.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <functional>

#include "core/torch_compat.h"

namespace salt::models {
namespace {

using Op = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

torch::Tensor under_bf16_autocast(const Op& op, const std::vector<torch::Tensor>& in) {
  compat::AutocastGuard autocast(torch::kCPU, torch::kBFloat16);
  return op(in);
}

// The exact answer a bf16 product can give: the bf16 inputs multiplied in double,
// rounded once to bf16.
torch::Tensor exact(const Op& op, const std::vector<torch::Tensor>& in) {
  std::vector<torch::Tensor> wide;
  for (const auto& t : in) wide.push_back(t.to(torch::kBFloat16).to(torch::kDouble));
  return op(wide).to(torch::kBFloat16);
}

double max_error(const torch::Tensor& got, const torch::Tensor& reference) {
  return (got.to(torch::kDouble) - reference.to(torch::kDouble)).abs().max().item<double>();
}

void compare(const Op& op, const std::vector<torch::Tensor>& in) {
  const auto native = under_bf16_autocast(op, in);
  torch::Tensor emulated;
  {
    ScopedCpuBf16Emulation emulation;
    emulated = under_bf16_autocast(op, in);
  }
  const auto reference = exact(op, in);
  ASSERT_EQ(native.scalar_type(), torch::kBFloat16);
  ASSERT_EQ(emulated.scalar_type(), torch::kBFloat16);
  ASSERT_EQ(emulated.sizes(), reference.sizes());
  // float32 accumulation: the exact bf16 result, or one bf16 step (2^-8 relative) off it
  const auto r = reference.to(torch::kDouble), e = emulated.to(torch::kDouble);
  EXPECT_TRUE(((e - r).abs() <= r.abs() / 256 + 1e-30).all().item<bool>()) << e << r;
  EXPECT_GE(e.eq(r).to(torch::kDouble).mean().item<double>(), 0.9);
  // no further from it than LibTorch's own bf16 kernel, which rounds to bf16 as it goes
  EXPECT_LE(max_error(emulated, reference), max_error(native, reference));
  // LibTorch's kernels again once the emulation ends, bit for bit
  EXPECT_TRUE(torch::equal(under_bf16_autocast(op, in), native));
}

TEST(CpuBf16, EveryProductMatchesLibTorchsBf16Kernel) {
  torch::manual_seed(3);
  auto r = [](std::vector<int64_t> s) { return torch::randn(s); };
  compare([](const auto& t) { return torch::linear(t[0], t[1], t[2]); }, {r({6, 16}), r({5, 16}), r({5})});
  compare([](const auto& t) { return torch::linear(t[0], t[1]); }, {r({2, 6, 16}), r({5, 16})});
  compare([](const auto& t) { return torch::matmul(t[0], t[1]); }, {r({2, 3, 7, 8}), r({2, 3, 8, 7})});
  compare([](const auto& t) { return torch::mm(t[0], t[1]); }, {r({6, 16}), r({16, 4})});
  compare([](const auto& t) { return torch::bmm(t[0], t[1]); }, {r({3, 6, 16}), r({3, 16, 4})});
  compare([](const auto& t) { return torch::addmm(t[0], t[1], t[2], 0.5, 2.0); }, {r({6, 4}), r({6, 16}), r({16, 4})});
  compare([](const auto& t) { return torch::baddbmm(t[0], t[1], t[2], 0.5, 2.0); },
          {r({3, 6, 4}), r({3, 6, 16}), r({3, 16, 4})});
  compare([](const auto& t) { return torch::addbmm(t[0], t[1], t[2]); }, {r({6, 4}), r({3, 6, 16}), r({3, 16, 4})});
}

TEST(CpuBf16, GradientsMatchLibTorchsBf16Kernel) {
  torch::manual_seed(4);
  const auto x0 = torch::randn({8, 16}), w0 = torch::randn({5, 16}), b0 = torch::randn({5});
  auto grads = [&] {
    auto x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
    {
      compat::AutocastGuard autocast(torch::kCPU, torch::kBFloat16);
      torch::linear(x, w, b).to(torch::kFloat).pow(2).sum().backward();
    }
    return std::vector<torch::Tensor>{x.grad(), w.grad(), b.grad()};
  };
  const auto native = grads();
  std::vector<torch::Tensor> emulated;
  {
    ScopedCpuBf16Emulation emulation;
    emulated = grads();
  }
  for (size_t i = 0; i < native.size(); ++i) {
    EXPECT_EQ(emulated[i].scalar_type(), torch::kFloat) << i;  // the leaves' dtype, as under autocast
    const double tol = native[i].abs().max().item<double>() / 64;
    EXPECT_LE((native[i] - emulated[i]).abs().max().item<double>(), tol) << i << native[i] << emulated[i];
  }
}

TEST(CpuBf16, OutsideAutocastNothingChanges) {
  torch::manual_seed(5);
  const auto a = torch::randn({6, 16}), b = torch::randn({16, 4});
  const auto before = torch::mm(a, b);
  ScopedCpuBf16Emulation emulation;
  const auto during = torch::mm(a, b);
  EXPECT_EQ(during.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(before, during));
}

// The CPU's instruction set decides until a fit sets its StepOptions' mode
// (SALT_CPU_BF16: training/step/step_options.h).
TEST(CpuBf16, TheSettingDecidesAfterTheCpu) {
  EXPECT_EQ(cpu_bf16_emulated(), cpu_bf16_emulated_by_default());
  set_cpu_bf16_emulated(false);
  EXPECT_FALSE(cpu_bf16_emulated());
  set_cpu_bf16_emulated(true);
  EXPECT_TRUE(cpu_bf16_emulated());
  set_cpu_bf16_emulated(cpu_bf16_emulated_by_default());
}

}  // namespace
}  // namespace salt::models
