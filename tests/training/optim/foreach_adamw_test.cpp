// ForeachAdamW (training/optim/foreach_adamw.h) against LibTorch's AdamW, which salt-cpp
// used before and whose checkpoints it writes: bitwise the same parameters and
// state after steps with weight decay, a changing lr and beta1 (the one-cycle
// schedule), parameter groups, a parameter without gradient, and AMSGrad.
#include <gtest/gtest.h>

#include "core/torch_compat.h"
#include "training/optim/foreach_adamw.h"

namespace salt::testing {
namespace {

std::vector<torch::Tensor> make_params(uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({4, 3}).requires_grad_(), torch::randn({3}).requires_grad_(),
          torch::randn({2, 2, 5}).requires_grad_(), torch::randn({6}).requires_grad_()};
}

// Runs 4 steps with schedule changes on `opt` over `params` (gradients drawn from a
// fixed seed; the last parameter never gets one).
template <class Opt>
void run(Opt& opt, std::vector<torch::Tensor>& params) {
  torch::manual_seed(99);
  for (int t = 0; t < 4; ++t) {
    for (std::size_t i = 0; i + 1 < params.size(); ++i) params[i].mutable_grad() = torch::randn(params[i].sizes());
    for (auto& group : opt.param_groups()) {
      auto& o = static_cast<torch::optim::AdamWOptions&>(group.options());
      o.lr(o.lr() * (t + 1));
      o.betas(std::make_tuple(0.95 - 0.03 * t, 0.999));
    }
    opt.step();
  }
}

void expect_same(torch::optim::Optimizer& a, torch::optim::Optimizer& b, const std::vector<torch::Tensor>& pa,
                 const std::vector<torch::Tensor>& pb) {
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
  ASSERT_EQ(a.state().size(), b.state().size());
}

TEST(ForeachAdamW, EqualsLibTorchsAdamWBitwise) {
  for (bool amsgrad : {false, true}) {
    auto pa = make_params(1), pb = make_params(1);
    auto options = torch::optim::AdamWOptions(1e-2).weight_decay(0.1).amsgrad(amsgrad);
    torch::optim::AdamW reference(pa, options);
    training::ForeachAdamW foreach(pb, options);
    run(reference, pa);
    run(foreach, pb);
    expect_same(reference, foreach, pa, pb);
    // the state a checkpoint saves: step and moments
    for (std::size_t i = 0; i + 1 < pa.size(); ++i) {
      auto& sa = static_cast<torch::optim::AdamWParamState&>(
          *reference.state().at(salt::compat::optimizer_state_key(reference.state(), pa[i])));
      auto& sb = static_cast<torch::optim::AdamWParamState&>(
          *foreach.state().at(salt::compat::optimizer_state_key(foreach.state(), pb[i])));
      EXPECT_EQ(sa.step(), sb.step());
      EXPECT_TRUE(torch::equal(sa.exp_avg(), sb.exp_avg()));
      EXPECT_TRUE(torch::equal(sa.exp_avg_sq(), sb.exp_avg_sq()));
    }
  }
}

TEST(ForeachAdamW, ParameterGroupsKeepTheirOwnSettings) {  // muP's groups: lr / m, weight_decay * m
  auto pa = make_params(2), pb = make_params(2);
  auto groups = [](std::vector<torch::Tensor>& p) {
    std::vector<torch::optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<torch::Tensor>{p[0], p[2]},
                   std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(1e-3).weight_decay(0.4)));
    g.emplace_back(std::vector<torch::Tensor>{p[1], p[3]},
                   std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(4e-3).weight_decay(0.1)));
    return g;
  };
  torch::optim::AdamW reference(groups(pa), torch::optim::AdamWOptions(1e-3));
  training::ForeachAdamW foreach(groups(pb), torch::optim::AdamWOptions(1e-3));
  run(reference, pa);
  run(foreach, pb);
  expect_same(reference, foreach, pa, pb);
}

}  // namespace
}  // namespace salt::testing
