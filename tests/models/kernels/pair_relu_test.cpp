// The vertexing edges' first hidden layer in one operation (models/kernels/pair_relu.h):
// the kernels' functions run on the CPU against values worked by hand and against
// LibTorch's gathers, add and ReLU with autograd; the card's kernels are held to the
// same in tests/gpu.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "support/op_trace.h"
#include "models/kernels/pair_relu.h"
#include "models/layers/dense.h"
#include "models/packing/common.h"

namespace salt::models {
namespace {

using salt::testing::OpTrace;

const auto kIndex = torch::TensorOptions().dtype(torch::kLong);

// Edges grouped as vertexing_task.cpp groups them: by sender in turn, by receiver
// through an order.
struct PairGraph {
  torch::Tensor row_i, row_j;
  PairSide senders, receivers;
  RowGroups groups(const PairSide& side, bool kernel) const { return {side.counts, side.order, kernel}; }
};

PairGraph graph_of(const torch::Tensor& row_i, const torch::Tensor& row_j, int64_t rows) {
  PairGraph e{row_i, row_j, {}, {}};
  e.senders = {torch::bincount(row_i, {}, rows), torch::Tensor()};
  // Stable: a receiver's edges in the order of the edges, as vertexing's are.
  const auto order = std::get<1>(row_j.sort(/*stable=*/true, 0, false));
  e.receivers = {torch::bincount(row_j, {}, rows), order};
  return e;
}

// Three tracks, four edges: 0->1, 0->2, 1->0, 2->0; two columns.
TEST(PairRelu, OneSmallGraphByHand) {
  const auto p_i = torch::tensor({{1.f, -2.f}, {0.5f, 1.f}, {-3.f, 4.f}}).requires_grad_(true);
  const auto p_j = torch::tensor({{2.f, 1.f}, {-1.f, 3.f}, {1.f, -5.f}}).requires_grad_(true);
  const auto e = graph_of(torch::tensor({0, 0, 1, 2}, kIndex), torch::tensor({1, 2, 0, 0}, kIndex), 3);
  auto h = pair_relu(p_i, p_j, e.row_i, e.row_j, e.senders, e.receivers);
  // p_i[0] + p_j[1] = (0, 1); p_i[0] + p_j[2] = (2, -7); p_i[1] + p_j[0] = (2.5, 2);
  // p_i[2] + p_j[0] = (-1, 5); then ReLU.
  EXPECT_TRUE(torch::equal(h, torch::tensor({{0.f, 1.f}, {2.f, 0.f}, {2.5f, 2.f}, {0.f, 5.f}})));
  // Upstream gradient (edge e, column c) = 10 e + c + 1; kept where h > 0.
  const auto upstream = torch::tensor({{1.f, 2.f}, {11.f, 12.f}, {21.f, 22.f}, {31.f, 32.f}});
  h.backward(upstream);
  // Senders: track 0 has edges 0, 1: (0 + 11, 2 + 0); track 1 edge 2: (21, 22);
  // track 2 edge 3: (0, 32).
  EXPECT_TRUE(torch::equal(p_i.grad(), torch::tensor({{11.f, 2.f}, {21.f, 22.f}, {0.f, 32.f}})));
  // Receivers: track 0 gets edges 2, 3: (21 + 0, 22 + 32); track 1 edge 0: (0, 2);
  // track 2 edge 1: (11, 0).
  EXPECT_TRUE(torch::equal(p_j.grad(), torch::tensor({{21.f, 54.f}, {0.f, 2.f}, {11.f, 0.f}})));
}

// Random graphs whose p_i and p_j are the two halves of one product (as vertexing's
// split first Linear gives them: rows 2H apart): forward and both gradients equal
// LibTorch's gathers, add and ReLU to float32's summation order, and what the
// vertexing task runs off a card (gather_pair_relu: common.h's gathers) as well.
TEST(PairRelu, FollowsLibTorchsGathersAddAndRelu) {
  torch::manual_seed(5);
  const int64_t rows = 300, hidden = 24;
  const auto row_i = std::get<0>(torch::randint(0, rows, {4000}, kIndex).sort());
  const auto e = graph_of(row_i, torch::randint(0, rows, {4000}, kIndex), rows);
  const auto p = torch::randn({rows, 2 * hidden});
  const auto upstream = torch::randn({4000, hidden});
  auto run = [&](int way) {
    auto leaf = p.clone().requires_grad_(true);
    const auto p_i = leaf.narrow(1, 0, hidden), p_j = leaf.narrow(1, hidden, hidden);
    auto h = way == 0   ? pair_relu(p_i, p_j, e.row_i, e.row_j, e.senders, e.receivers)
             : way == 1 ? pair_relu_reference(p_i, p_j, e.row_i, e.row_j)
                        : gather_pair_relu(p_i, p_j, e.row_i, e.row_j, e.groups(e.senders, true),
                                           e.groups(e.receivers, true));
    h.backward(upstream);
    return std::make_pair(h.detach(), leaf.grad());
  };
  const auto [h, grad] = run(0);
  EXPECT_GT((h == 0).to(torch::kFloat).mean().item<double>(), 0.3);  // the ReLU cut some
  for (const int way : {1, 2}) {
    const auto [want_h, want_grad] = run(way);
    EXPECT_TRUE(torch::equal(h, want_h)) << way;
    EXPECT_TRUE(torch::allclose(grad, want_grad, 1e-5, 1e-5)) << way;
  }
}

// Off a card the edges keep LibTorch's operators, the kernel asked for or not; what
// the operation cannot take is one line.
TEST(PairRelu, TakesTheEdgesOnlyOnACardAndRefusesWhatItCannotTake) {
  const auto p = torch::randn({3, 4});
  const auto e = graph_of(torch::tensor({0, 1}, kIndex), torch::tensor({1, 0}, kIndex), 3);
  EXPECT_FALSE(pair_relu_takes(p, p, e.senders, e.receivers));
  OpTrace trace;
  const auto h = gather_pair_relu(p, p, e.row_i, e.row_j, e.groups(e.senders, true), e.groups(e.receivers, true));
  EXPECT_TRUE(torch::equal(h, pair_relu_reference(p, p, e.row_i, e.row_j)));
  for (const auto& line : trace.take()) EXPECT_EQ(line.find("salt::pair_relu"), std::string::npos) << line;
  EXPECT_THROW(pair_relu(p, p.to(torch::kDouble), e.row_i, e.row_j, e.senders, e.receivers), UsageError);
  EXPECT_THROW(pair_relu(p.to(torch::kBFloat16), p.to(torch::kBFloat16), e.row_i, e.row_j, e.senders, e.receivers),
               UsageError);
  EXPECT_THROW(pair_relu(p, p.narrow(0, 0, 2), e.row_i, e.row_j, e.senders, e.receivers), UsageError);
  EXPECT_THROW(pair_relu(p, p.t(), e.row_i, e.row_j, e.senders, e.receivers), UsageError);
}

// A Dense whose first Linear is followed by a ReLU says so, and the rest after the
// ReLU is the rest after the Linear less that ReLU; other activations are not fused.
TEST(PairRelu, DenseSaysWhenAReluFollowsItsFirstLinear) {
  torch::manual_seed(6);
  Dense relu(DenseOptions(6).hidden_layers(std::vector<int64_t>{5, 4}).output_size(2));
  EXPECT_TRUE(relu->relu_follows_first());
  const auto h = torch::randn({7, 5});
  EXPECT_TRUE(torch::equal(relu->forward_after_first_relu(torch::relu(h)), relu->forward_after_first(h)));
  Dense silu(DenseOptions(6).activation("SiLU"));
  EXPECT_FALSE(silu->relu_follows_first());
  EXPECT_THROW(silu->forward_after_first_relu(h), UsageError);
  Dense dropped(DenseOptions(6).dropout(0.1));
  EXPECT_FALSE(dropped->relu_follows_first());
  Dense single(DenseOptions(6).hidden_layers(std::vector<int64_t>{}));
  EXPECT_FALSE(single->relu_follows_first());
}

}  // namespace
}  // namespace salt::models
