// ForeachAdamW (training/optim/foreach_adamw.h) against torch.optim.AdamW as salt's
// torch (>= 2.1) computes it, written out here operator by operator from
// torch/optim/adamw.py's _single_tensor_adamw (lerp_ for the first moment): bitwise
// the same parameters and state after steps with weight decay, a changing lr and
// beta1 (the one-cycle schedule), parameter groups, a parameter without gradient,
// and AMSGrad. LibTorch 1.13's own AdamW (mul_ then add_) rounds otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

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

// torch >= 2.1's AdamW step, one parameter group's options, for every parameter.
class TorchAdamW {
 public:
  TorchAdamW(std::vector<torch::Tensor> params, torch::optim::AdamWOptions options)
      : params_(std::move(params)), options_(options) {}
  torch::optim::AdamWOptions& options() { return options_; }
  void step() {
    torch::NoGradGuard no_grad;
    const double lr = options_.lr(), wd = options_.weight_decay(), eps = options_.eps();
    const double beta1 = std::get<0>(options_.betas()), beta2 = std::get<1>(options_.betas());
    for (std::size_t i = 0; i < params_.size(); ++i) {
      auto& p = params_[i];
      if (!p.grad().defined()) continue;
      auto& s = state_[i];
      if (!s.m.defined()) s = {torch::zeros_like(p), torch::zeros_like(p), torch::zeros_like(p), 0};
      const auto& g = p.grad();
      s.step += 1;
      p.mul_(1 - lr * wd);
      s.m.lerp_(g, 1 - beta1);
      s.v.mul_(beta2).addcmul_(g, g, 1 - beta2);
      const double bc1 = 1 - std::pow(beta1, static_cast<double>(s.step));
      const double bc2_sqrt = std::sqrt(1 - std::pow(beta2, static_cast<double>(s.step)));
      torch::Tensor denom;
      if (options_.amsgrad()) {
        torch::maximum_out(s.vmax, s.vmax, s.v);
        denom = (s.vmax.sqrt() / bc2_sqrt).add_(eps);
      } else {
        denom = (s.v.sqrt() / bc2_sqrt).add_(eps);
      }
      p.addcdiv_(s.m, denom, -(lr / bc1));
    }
  }
  struct State {
    torch::Tensor m, v, vmax;
    int64_t step = 0;
  };
  std::map<std::size_t, State> state_;

 private:
  std::vector<torch::Tensor> params_;
  torch::optim::AdamWOptions options_;
};

// Runs 4 steps with schedule changes (set_options: the lr and betas of step t).
template <class SetOptions, class Step>
void run_steps(std::vector<torch::Tensor>& params, SetOptions set_options, Step step) {
  torch::manual_seed(99);
  for (int t = 0; t < 4; ++t) {
    for (std::size_t i = 0; i + 1 < params.size(); ++i) params[i].mutable_grad() = torch::randn(params[i].sizes());
    set_options(t);
    step();
  }
}

void schedule(torch::optim::AdamWOptions& o, int t) {
  o.lr(o.lr() * (t + 1));
  o.betas(std::make_tuple(0.95 - 0.03 * t, 0.999));
}

TEST(ForeachAdamW, EqualsTorchsAdamWBitwise) {
  for (bool amsgrad : {false, true}) {
    auto pa = make_params(1), pb = make_params(1);
    auto options = torch::optim::AdamWOptions(1e-2).weight_decay(0.1).amsgrad(amsgrad);
    TorchAdamW reference(pa, options);
    training::ForeachAdamW foreach(pb, options);
    run_steps(pa, [&](int t) { schedule(reference.options(), t); }, [&] { reference.step(); });
    run(foreach, pb);
    for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
    // the state a checkpoint saves: step and moments
    for (std::size_t i = 0; i + 1 < pa.size(); ++i) {
      auto& sb = static_cast<torch::optim::AdamWParamState&>(
          *foreach.state().at(salt::compat::optimizer_state_key(foreach.state(), pb[i])));
      EXPECT_EQ(reference.state_[i].step, sb.step());
      EXPECT_TRUE(torch::equal(reference.state_[i].m, sb.exp_avg())) << "exp_avg " << i;
      EXPECT_TRUE(torch::equal(reference.state_[i].v, sb.exp_avg_sq())) << "exp_avg_sq " << i;
    }
    EXPECT_EQ(foreach.state().size(), 3u);  // no state for the parameter without gradient
  }
}

// The first moment is where torch >= 2.1 and LibTorch 1.13 part: lerp_ and mul_+add_
// round differently, so the parameters differ in their last bits after a few steps.
TEST(ForeachAdamW, RoundsAsLerpNotAsLibTorchsMulAdd) {
  auto pa = make_params(3), pb = make_params(3);
  auto options = torch::optim::AdamWOptions(1e-2).weight_decay(0.1);
  torch::optim::AdamW libtorch(pa, options);
  training::ForeachAdamW foreach(pb, options);
  run(libtorch, pa);
  run(foreach, pb);
  bool any_differs = false;
  for (std::size_t i = 0; i < pa.size(); ++i) any_differs = any_differs || !torch::equal(pa[i], pb[i]);
  EXPECT_TRUE(any_differs);
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::allclose(pa[i], pb[i], 1e-6, 1e-7));
}

TEST(ForeachAdamW, ParameterGroupsKeepTheirOwnSettings) {  // muP's groups: lr / m, weight_decay * m
  auto pa = make_params(2), pb = make_params(2);
  TorchAdamW first({pa[0], pa[2]}, torch::optim::AdamWOptions(1e-3).weight_decay(0.4));
  TorchAdamW second({pa[1], pa[3]}, torch::optim::AdamWOptions(4e-3).weight_decay(0.1));
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{pb[0], pb[2]},
                      std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(1e-3).weight_decay(0.4)));
  groups.emplace_back(std::vector<torch::Tensor>{pb[1], pb[3]},
                      std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(4e-3).weight_decay(0.1)));
  training::ForeachAdamW foreach(std::move(groups), torch::optim::AdamWOptions(1e-3));
  run_steps(
      pa, [&](int t) { schedule(first.options(), t), schedule(second.options(), t); },
      [&] { first.step(), second.step(); });
  run(foreach, pb);
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
}

}  // namespace
}  // namespace salt::testing
