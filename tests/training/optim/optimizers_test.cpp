// salt's `model.optimizer: lion` and `HybridMuonAdamW`: three scheduled steps on
// tiny tensors against values computed independently in Python, salt's Muon name
// policy, and exact resumption from a checkpoint for every optimizer.
//
// Reference values: tests/training/reference/optimizers_reference.py (by hand from
// lion_pytorch's update_fn and torch.optim.Muon's _single_tensor_muon, driven by
// torch 1.13's OneCycleLR as salt does; run with /usr/bin/python3, output pasted).
#include <gtest/gtest.h>

#include <iostream>

#include "core/errors.h"
#include "core/torch_compat.h"
#include "models/model_test_helpers.h"
#include "support/test_support.h"
#include "training/checkpoints/checkpoint.h"
#include "training/fit_support.h"  // tests/training: FitTest
#include "training/optim/muon.h"
#include "training/optim/optimization.h"

namespace salt::testing {
namespace {

using training::Optimization;
using training::OptimizerKind;

// The reference script's lrs_config: initial, max, end, pct_start, weight_decay; 4 planned steps.
const training::LrsConfig kLrs{0.01, 0.05, 0.001, 0.5, 0.1, -1};

// layer.weight 3x2 (tall: transposed in Newton-Schulz), proj.weight 2x4, layer.bias 3; float64.
Optimization::NamedParameters tiny_params() {
  auto f = torch::kFloat64;
  Optimization::NamedParameters p;
  p.insert("layer.weight", torch::tensor({{0.5, -0.3}, {0.2, 0.8}, {-0.6, 0.1}}, f).requires_grad_());
  p.insert("proj.weight", torch::tensor({{0.1, -0.2, 0.3, -0.4}, {0.5, 0.6, -0.7, 0.05}}, f).requires_grad_());
  p.insert("layer.bias", torch::tensor({0.1, -0.2, 0.3}, f).requires_grad_());
  return p;
}

// The script's grads(t): base + t * delta.
void set_grads(Optimization::NamedParameters& p, int t) {
  auto f = torch::kFloat64;
  const torch::Tensor base[] = {torch::tensor({0.3, -0.1, 0.05, 0.2, -0.4, 0.25}, f),
                                torch::tensor({0.2, 0.1, -0.3, 0.05, -0.15, 0.4, 0.1, -0.2}, f),
                                torch::tensor({0.2, -0.05, 0.1}, f)};
  const torch::Tensor delta[] = {torch::tensor({-0.5, 0.3, 0.2, -0.35, 0.45, 0.1}, f),
                                 torch::tensor({-0.3, 0.25, 0.4, -0.1, 0.2, -0.6, 0.05, 0.3}, f),
                                 torch::tensor({-0.3, 0.12, -0.25}, f)};
  for (std::size_t i = 0; i < p.size(); ++i)
    p[i].value().mutable_grad() = (base[i] + t * delta[i]).view_as(p[i].value());
}

double max_abs_diff(const torch::Tensor& got, const std::vector<double>& want) {
  auto w = torch::tensor(want, torch::kFloat64).view_as(got);
  return (got.detach() - w).abs().max().item<double>();
}

Optimization::NamedParameters run_three_steps(OptimizerKind kind, std::vector<training::AdamParamState>* state) {
  auto p = tiny_params();
  Optimization opt(p, kind, kLrs, 4);
  for (int t = 0; t < 3; ++t) {
    set_grads(p, t);
    opt.step();
  }
  *state = training::adam_state(opt);
  return p;
}

TEST(Lion, ThreeScheduledStepsMatchReference) {
  std::vector<training::AdamParamState> state;
  auto p = run_three_steps(OptimizerKind::kLion, &state);
  const std::vector<std::vector<double>> params = {
      {0.561183016125, -0.36288895867499993, 0.11299692994999999, 0.8586241023, -0.6603300448499999,
       0.013849901224999996},
      {0.16459490122499998, -0.28359118495, 0.23199321367499995, -0.3311402424, 0.43028727112499987,
       0.6603300448499999, -0.779326328575, -0.015874358137500003},
      {0.16459490122499998, -0.26374192994999995, 0.36288895867499993}};
  const std::vector<std::vector<double>> exp_avg = {
      {-0.006039700000000005, 0.005999900000000005, 0.007465050000000007, -0.004524800000000003,
       0.0015746000000000015, 0.01041525000000001},
      {-0.003029800000000002, 0.010445100000000008, 0.0030497000000000033, -0.0015049500000000016,
       0.0015248500000000016, -0.006059600000000004, 0.004465100000000005, 0.003029800000000002},
      {-0.003029800000000002, 0.002102950000000002, -0.004504900000000004}};
  double worst = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    worst = std::max(worst, max_abs_diff(p[i].value(), params[i]));
    worst = std::max(worst, max_abs_diff(state[i].exp_avg, exp_avg[i]));
    EXPECT_FALSE(state[i].exp_avg_sq.defined());
  }
  std::cout << "Lion vs reference: max abs diff " << worst << "\n";
  EXPECT_LT(worst, 1e-14);
}

TEST(HybridMuonAdamW, ThreeScheduledStepsMatchReference) {
  std::vector<training::AdamParamState> state;
  auto p = run_three_steps(OptimizerKind::kHybridMuonAdamW, &state);
  // Newton-Schulz runs in bf16: the reference emulates it with torch's bf16 ops,
  // which torch 1.13 and 2.x round differently on the CPU (the same steps in
  // float64 move these weights by 2.9e-3; the two versions' by 2.4e-3). So each has
  // its reference, the same script run by Debian 12's torch 1.13 and by trixie's 2.6
  // (scripts/check_torch2.sh's python).
#if SALT_TORCH_AT_LEAST(2, 0)
  const std::vector<double> layer = {0.5110529914197227, -0.3288142689095083, 0.11257233163393744,
                                     0.7804288574525567, -0.6016444871987056, 0.028356081527178747};
  const std::vector<double> proj = {0.10349464038027344, -0.24536591039921876, 0.2834938474640624,
                                    -0.39768655812143555, 0.5039597363203125, 0.5920873697328123,
                                    -0.7705016169880858, 0.04245341668183593};
#else
  const std::vector<double> layer = {0.5134226622906823, -0.3280925159505767, 0.11269116087248972,
                                     0.7826100795810471, -0.6028697153180639, 0.02723108282037148};
  const std::vector<double> proj = {0.10331607568789063, -0.24655732661015622, 0.2839328408624999,
                                    -0.3977513878736329, 0.5034193382734375, 0.5927273007191405,
                                    -0.7711444454939452, 0.041208468439648434};
#endif
  // The bias takes AdamW, which rounds alike on both.
  const std::vector<std::vector<double>> params = {
      layer, proj, {0.08760146875550995, -0.21575554847863618, 0.3167278389774941}};
  const std::vector<std::vector<double>> momentum = {
      {-0.030962500000000025, 0.029987500000000028, 0.03663125000000003, -0.02310000000000002, 0.009325000000000007,
       0.05040625000000004},
      {-0.015725000000000013, 0.051137500000000044, 0.016212500000000015, -0.0076187500000000075,
       0.008106250000000008, -0.03145000000000003, 0.02163750000000002, 0.015725000000000013}};
  const std::vector<double> bias_exp_avg_sq = {0.00020991004000000017, 4.349010250000004e-05, 0.0001924575100000002};
  double worst_weights = 0, worst_state = 0;
  for (std::size_t i = 0; i < 3; ++i) worst_weights = std::max(worst_weights, max_abs_diff(p[i].value(), params[i]));
  for (std::size_t i = 0; i < 2; ++i) {
    worst_state = std::max(worst_state, max_abs_diff(state[i].momentum_buffer, momentum[i]));
    EXPECT_FALSE(state[i].exp_avg.defined());
  }
  worst_state = std::max(worst_state, max_abs_diff(state[2].exp_avg_sq, bias_exp_avg_sq));
  EXPECT_EQ(state[2].step, 3);
  std::cout << "HybridMuonAdamW vs reference: weights max abs diff " << worst_weights << ", state "
            << worst_state << "\n";
  EXPECT_LT(worst_weights, 1e-6);
  EXPECT_LT(worst_state, 1e-15);
}

TEST(HybridMuonAdamW, MomentumIsNotCycled) {
  auto p = tiny_params();
  Optimization hybrid(p, OptimizerKind::kHybridMuonAdamW, kLrs, 4);
  EXPECT_EQ(hybrid.current_beta1(), 0.0);  // what Lightning's LR monitor logs for it
  const auto& adamw =
      static_cast<const torch::optim::AdamWOptions&>(hybrid.optimizers()[1]->param_groups()[0].options());
  EXPECT_EQ(std::get<0>(adamw.betas()), 0.9);
  const auto& muon = static_cast<const training::MuonOptions&>(hybrid.optimizers()[0]->param_groups()[0].options());
  EXPECT_EQ(muon.momentum(), 0.95);
  EXPECT_DOUBLE_EQ(muon.lr(), hybrid.current_lr());
  Optimization lion(tiny_params(), OptimizerKind::kLion, kLrs, 4);
  EXPECT_DOUBLE_EQ(lion.current_beta1(), 0.95);  // cycled from max_momentum, as OneCycleLR does
}

TEST(Muon, NamePolicyFollowsSalt) {
  auto matrix = torch::zeros({2, 2}, torch::requires_grad());
  for (const auto* name : {"encoder.layers.0.attn.linear_q.weight", "init_nets.0.net.net.0.weight", "my_bias.weight",
                           "tasks.0.net.net.2.weight"})
    EXPECT_TRUE(training::is_muon_param(name, matrix)) << name;
  for (const auto* name : {"net.bias", "encoder.norm.weight", "layers.0.LayerNorm.weight", "blocks.0.ln1.weight",
                           "ln.weight", "token_embedding.weight", "embed.weight", "head.weight", "classifier.w",
                           "out_proj.weight", "output_layer.weight", "final.weight", "layers.0.attn.q_norm.weight"})
    EXPECT_FALSE(training::is_muon_param(name, matrix)) << name;
  EXPECT_FALSE(training::is_muon_param("layer.weight", torch::zeros({2}, torch::requires_grad())));     // 1-D
  EXPECT_FALSE(training::is_muon_param("layer.weight", torch::zeros({2, 2, 2}, torch::requires_grad())));  // 3-D
  EXPECT_FALSE(training::is_muon_param("layer.weight", torch::zeros({2, 2})));  // frozen
}

// Which salt-cpp GN2 parameters go where (names as model->named_parameters()).
TEST(HybridMuonAdamW, SplitsGN2ByName) {
  using namespace salt::models::testing;
  auto model = build(small_gn2_yaml(), make_context(2, 19));
  Optimization opt(model->named_parameters(), OptimizerKind::kHybridMuonAdamW, kLrs, 4);
  const auto* muon = opt.optimizers()[0].get();
  std::vector<std::string> to_muon, to_adamw;
  for (std::size_t i = 0; i < opt.parameters().size(); ++i)
    (opt.owner(i) == muon ? to_muon : to_adamw).push_back(opt.parameter_names()[i]);
  std::cout << "Muon:";
  for (const auto& n : to_muon) std::cout << " " << n;
  std::cout << "\nAdamW:";
  for (const auto& n : to_adamw) std::cout << " " << n;
  std::cout << "\n";
  ASSERT_FALSE(to_muon.empty());
  for (std::size_t i = 0; i < opt.parameters().size(); ++i) {
    const auto& name = opt.parameter_names()[i];
    const bool muon_side = opt.owner(i) == muon;
    EXPECT_EQ(muon_side, training::is_muon_param(name, opt.parameters()[i])) << name;
    if (muon_side) {
      EXPECT_EQ(opt.parameters()[i].dim(), 2) << name;
      EXPECT_EQ(name.find("norm"), std::string::npos) << name;
      EXPECT_EQ(name.find("bias"), std::string::npos) << name;
    }
  }
}

TEST(HybridMuonAdamW, EmptySideIsAUsageError) {
  Optimization::NamedParameters only_bias;
  only_bias.insert("layer.bias", torch::zeros({3}, torch::requires_grad()));
  EXPECT_THROW(Optimization(only_bias, OptimizerKind::kHybridMuonAdamW, kLrs, 4), UsageError);
  Optimization::NamedParameters only_matrix;
  only_matrix.insert("layer.weight", torch::zeros({3, 2}, torch::requires_grad()));
  EXPECT_THROW(Optimization(only_matrix, OptimizerKind::kHybridMuonAdamW, kLrs, 4), UsageError);
}

TEST(Optimization, OptimizerNamesAreSalts) {
  EXPECT_EQ(training::optimizer_kind("AdamW"), OptimizerKind::kAdamW);
  EXPECT_EQ(training::optimizer_kind("lion"), OptimizerKind::kLion);
  EXPECT_EQ(training::optimizer_kind("HybridMuonAdamW"), OptimizerKind::kHybridMuonAdamW);
  EXPECT_THROW(training::optimizer_kind("Lion"), UsageError);
}

// --- checkpoints ---

struct TwoLayerImpl : torch::nn::Module {
  TwoLayerImpl() {
    hidden = register_module("hidden", torch::nn::Linear(3, 4));
    last = register_module("last", torch::nn::Linear(4, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) { return last(torch::tanh(hidden(x))); }
  torch::nn::Linear hidden{nullptr}, last{nullptr};
};
TORCH_MODULE(TwoLayer);

void train(TwoLayer& model, Optimization& opt, int from, int to) {
  for (int t = from; t < to; ++t) {
    opt.zero_grad();
    auto x = torch::linspace(-1, 1, 15).view({5, 3}) * (1 + 0.1 * t);
    model->forward(x).pow(2).sum().backward();
    opt.step();
  }
}

training::CheckpointState state_of(TwoLayer& model, Optimization& opt) {
  training::CheckpointState state;
  state.global_step = opt.steps_done();
  state.config_yaml = "name: tiny\n";
  state.state_dict = training::module_state(*model);
  state.adam_state = training::adam_state(opt);
  state.scheduler_total_steps = 8;
  return state;
}

TEST(Checkpoint, ResumeContinuesBitwiseForEveryOptimizer) {
  for (auto kind : {OptimizerKind::kAdamW, OptimizerKind::kLion, OptimizerKind::kHybridMuonAdamW}) {
    SCOPED_TRACE(static_cast<int>(kind));
    TempDir dir;
    torch::manual_seed(3);
    TwoLayer straight;
    TwoLayer split;
    training::load_module_state(*split, training::module_state(*straight), "copy");
    Optimization a(straight->named_parameters(), kind, kLrs, 8);
    train(straight, a, 0, 6);

    Optimization b(split->named_parameters(), kind, kLrs, 8);
    train(split, b, 0, 3);
    training::save_checkpoint(dir / "x.ckpt", state_of(split, b), &b);
    auto loaded = training::load_checkpoint(dir / "x.ckpt");
    TwoLayer resumed;
    training::load_module_state(*resumed, loaded.state_dict, "x.ckpt");
    Optimization c(resumed->named_parameters(), kind, kLrs, 8, loaded.global_step);
    training::load_adam_state(c, loaded.adam_state, "x.ckpt");
    train(resumed, c, 3, 6);
    for (const auto& item : straight->named_parameters())
      EXPECT_TRUE(torch::equal(item.value(), resumed->named_parameters()[item.key()])) << item.key();
  }
}

TEST(Checkpoint, AnotherOptimizersStateIsAnInputError) {
  TempDir dir;
  TwoLayer model;
  Optimization lion(model->named_parameters(), OptimizerKind::kLion, kLrs, 8);
  train(model, lion, 0, 2);
  training::save_checkpoint(dir / "lion.ckpt", state_of(model, lion), &lion);
  auto loaded = training::load_checkpoint(dir / "lion.ckpt");
  for (auto kind : {OptimizerKind::kAdamW, OptimizerKind::kHybridMuonAdamW}) {
    Optimization other(model->named_parameters(), kind, kLrs, 8, 2);
    try {
      training::load_adam_state(other, loaded.adam_state, "lion.ckpt");
      ADD_FAILURE() << "loaded Lion's state into " << static_cast<int>(kind);
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("another model.optimizer"), std::string::npos) << e.what();
    }
  }
}

TEST(Checkpoint, PythonSeesSaltsHybridMuonAdamWLayout) {
  SALT_REQUIRE(have_python_module("torch"), "python3-torch is not installed (scripts/bootstrap.sh installs it)");
  TempDir dir;
  TwoLayer model;
  Optimization opt(model->named_parameters(), OptimizerKind::kHybridMuonAdamW, kLrs, 8);
  train(model, opt, 0, 2);
  training::save_checkpoint(dir / "h.ckpt", state_of(model, opt), &opt);
  auto r = run_python(R"(
import sys, torch
st = torch.load(sys.argv[1])["optimizer_states"][0]
print(sorted(st.keys()))
print(st["muon_names"], st["adamw_names"], st["wrapper"]["param_groups"][0]["params"])
print(sorted(st["muon"]["state"][0].keys()), sorted(st["adamw"]["state"][1].keys()))
)",
                      {(dir / "h.ckpt").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "['adamw', 'adamw_names', 'muon', 'muon_names', 'wrapper']\n"
            "['hidden.weight', 'last.weight'] ['hidden.bias', 'last.bias'] [0, 2, 1, 3]\n"
            "['momentum_buffer'] ['exp_avg', 'exp_avg_sq', 'step']\n");
}

// `model.optimizer` from the config reaches the fit loop (GN2 on the toy data).
TEST_F(FitTest, OptimizersFromConfigTrainGN2) {
  for (const auto* name : {"lion", "HybridMuonAdamW"}) {
    auto r = salt("fit", small_gn2({"--trainer.fast_dev_run", "2", "--model.optimizer", name}));
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
  }
  auto r = salt("fit", small_gn2({"--trainer.fast_dev_run", "2", "--model.optimizer", "SGD"}));
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
}  // namespace salt::testing
