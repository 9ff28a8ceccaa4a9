// salt-cpp's short-jet attention kernel (models/kernels/short_attention_block.h) run as
// the CPU runs it (one block at a time, through the same autograd function the
// card's launch goes through): its output and its gradient of q, k and v equal
// plain per-jet attention written with torch's matmul and softmax, in double.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/errors.h"
#include "models/kernels/short_attention.h"
#include "models/kernels/short_attention_block.h"

using namespace salt::models;

namespace {

struct Case {
  std::vector<int64_t> lengths;  // rows of each jet, in order
  int64_t heads, dh;
  double scale;
};

torch::Tensor starts_of(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> s{0};
  for (auto n : lengths) s.push_back(s.back() + n);
  return torch::tensor(s, torch::kLong);
}

// softmax(scale q k^T) v per jet and head, in double, from qkv [N, 3D].
torch::Tensor plain_attention(const torch::Tensor& qkv, const Case& c) {
  const int64_t d = c.heads * c.dh;
  std::vector<torch::Tensor> rows;
  int64_t r0 = 0;
  for (auto n : c.lengths) {
    if (n > 0) {
      auto jet = qkv.narrow(0, r0, n).view({n, 3, c.heads, c.dh});
      auto q = jet.select(1, 0).transpose(0, 1), k = jet.select(1, 1).transpose(0, 1), v = jet.select(1, 2).transpose(0, 1);
      auto p = torch::softmax(torch::matmul(q, k.transpose(1, 2)) * c.scale, -1);
      rows.push_back(torch::matmul(p, v).transpose(0, 1).reshape({n, d}));
    }
    r0 += n;
  }
  return torch::cat(rows, 0);
}

int64_t most(const std::vector<int64_t>& lengths) {
  int64_t m = 0;
  for (auto n : lengths) m = std::max(m, n);
  return m;
}

void expect_kernel_follows_plain_attention(const Case& c, uint64_t seed) {
  torch::manual_seed(seed);
  int64_t n = 0;
  for (auto l : c.lengths) n += l;
  const int64_t d = c.heads * c.dh;
  auto qkv = torch::randn({n, 3 * d});
  auto upstream = torch::randn({n, d});

  auto x = qkv.clone().requires_grad_(true);
  auto out = short_varlen_attention(x, starts_of(c.lengths), most(c.lengths), c.heads, c.scale);
  (out * upstream).sum().backward();

  auto xd = qkv.to(torch::kDouble).requires_grad_(true);
  auto want = plain_attention(xd, c);
  (want * upstream.to(torch::kDouble)).sum().backward();

  EXPECT_LT((out.to(torch::kDouble) - want).abs().max().item<double>(), 1e-5);
  EXPECT_LT((x.grad().to(torch::kDouble) - xd.grad()).abs().max().item<double>(), 1e-5);
}

}  // namespace

TEST(ShortAttention, FollowsPlainAttentionForwardAndBackward) {
  // Jets of one row (attends to itself only), an empty jet, and one long enough
  // that several rows share nothing with the others.
  expect_kernel_follows_plain_attention({{3, 1, 7, 0, 5, 16, 2}, 2, 4, 1.0 / std::sqrt(4.0)}, 1);
  // One head of 8, muP's 1 / dh scale.
  expect_kernel_follows_plain_attention({{4, 9, 1}, 1, 8, 1.0 / 8}, 2);
  // GN2's head size (256 / 8 heads) on a few jets.
  expect_kernel_follows_plain_attention({{15, 22, 6, 29}, 8, 32, 1.0 / std::sqrt(32.0)}, 3);
}

// max_len only sizes the shared memory: a larger one changes nothing.
TEST(ShortAttention, LargerMaxLenGivesTheSameResult) {
  torch::manual_seed(5);
  auto qkv = torch::randn({10, 3 * 6});
  auto starts = starts_of({4, 6});
  auto a = short_varlen_attention(qkv, starts, 6, 2, 0.5), b = short_varlen_attention(qkv, starts, 40, 2, 0.5);
  EXPECT_TRUE(torch::equal(a, b));
}

// Shared memory per block: the forward's q, k, v (rows dh + 1 floats apart) and
// the L x L scores; the backward's also dO and dS.
TEST(ShortAttention, SharedMemoryFloats) {
  EXPECT_EQ(short_attention::forward_smem_floats(15, 32), 3 * 15 * 33 + 15 * 15);
  EXPECT_EQ(short_attention::backward_smem_floats(15, 32), 4 * 15 * 33 + 2 * 15 * 15);
}

TEST(ShortAttention, RefusesWhatItCannotTake) {
  auto starts = starts_of({2});
  EXPECT_THROW(short_varlen_attention(torch::randn({2, 10}), starts, 2, 3, 1.0), salt::UsageError);  // 10 % 9
  EXPECT_THROW(short_varlen_attention(torch::randn({2, 6}, torch::kDouble), starts, 2, 1, 1.0), salt::UsageError);
  EXPECT_THROW(short_varlen_attention(torch::randn({2, 6}), starts.to(torch::kInt), 2, 1, 1.0), salt::UsageError);
  // No card's kernel takes a CPU tensor.
  EXPECT_FALSE(short_varlen_applies(torch::randn({2, 6}), 1, 2));
}
