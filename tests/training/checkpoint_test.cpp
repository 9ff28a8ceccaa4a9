// Checkpoints: written atomically, read back exactly, and readable by Python's
// torch.load as a Lightning-style dict.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "support/test_support.h"
#include "training/checkpoint.h"
#include "training/optimization.h"
#include "training/rng_state.h"

namespace salt::testing {
namespace {

struct TinyImpl : torch::nn::Module {
  TinyImpl() {
    net = register_module("net", torch::nn::Linear(3, 2));
    register_buffer("tracks_means", torch::tensor({1.0f, 2.0f, 3.0f}));
  }
  torch::nn::Linear net{nullptr};
};
TORCH_MODULE(Tiny);

training::CheckpointState trained_state(Tiny& model, training::Optimization& opt) {
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    model->net(torch::ones({4, 3})).pow(2).sum().backward();
    opt.step();
  }
  training::CheckpointState state;
  state.epoch = 2;
  state.global_step = opt.steps_done();
  state.config_yaml = "name: tiny\n";
  state.state_dict = training::module_state(*model);
  state.adam_state = training::adam_state(opt);
  state.scheduler_total_steps = 10;
  state.cpu_rng_state = training::cpu_rng_state();
  state.metrics = {{"val/loss", 0.5}};
  return state;
}

TEST(Checkpoint, RoundTripRestoresWeightsAndOptimizer) {
  TempDir dir;
  torch::manual_seed(1);
  Tiny model;
  training::Optimization opt(model->named_parameters(), training::OptimizerKind::kAdamW,
                             {1e-3, 1e-2, 1e-3, 0.3, 1e-5, -1}, 10);
  auto state = trained_state(model, opt);
  auto path = dir / "epoch=002-val_loss=0.50000.ckpt";
  training::save_checkpoint(path, state, &opt);
  // nothing but the checkpoint in the directory: the temp file was renamed
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 1);

  auto loaded = training::load_checkpoint(path);
  EXPECT_EQ(loaded.epoch, 2);
  EXPECT_EQ(loaded.global_step, 3);
  EXPECT_EQ(loaded.config_yaml, "name: tiny\n");
  EXPECT_EQ(loaded.scheduler_total_steps, 10);
  ASSERT_EQ(loaded.metrics.size(), 1u);
  EXPECT_EQ(loaded.metrics[0].second, 0.5);

  torch::manual_seed(99);
  Tiny fresh;
  training::load_module_state(*fresh, loaded.state_dict, path.string());
  EXPECT_TRUE(torch::equal(fresh->net->weight, model->net->weight));
  EXPECT_TRUE(torch::equal(fresh->named_buffers()["tracks_means"], model->named_buffers()["tracks_means"]));

  // Continuing both optimizers from here gives identical weights.
  training::Optimization resumed(fresh->named_parameters(), training::OptimizerKind::kAdamW,
                                 {1e-3, 1e-2, 1e-3, 0.3, 1e-5, -1}, 10, loaded.global_step);
  training::load_adam_state(resumed, loaded.adam_state, path.string());
  for (auto* pair : {&opt, &resumed}) {
    auto& m = pair == &opt ? model : fresh;
    pair->zero_grad();
    m->net(torch::ones({4, 3})).pow(2).sum().backward();
    pair->step();
  }
  EXPECT_TRUE(torch::equal(fresh->net->weight, model->net->weight));
}

TEST(Checkpoint, MismatchedModelIsAClearError) {
  TempDir dir;
  Tiny model;
  training::Optimization opt(model->named_parameters(), training::OptimizerKind::kAdamW,
                             {1e-3, 1e-2, 1e-3, 0.3, 1e-5, -1}, 10);
  auto state = trained_state(model, opt);
  state.state_dict.pop_back();
  training::save_checkpoint(dir / "a.ckpt", state, &opt);
  try {
    training::load_module_state(*model, training::load_checkpoint(dir / "a.ckpt").state_dict, "a.ckpt");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a.ckpt: checkpoint lacks 'tracks_means'"), std::string::npos) << e.what();
  }
  write_file(dir / "junk.ckpt", "not a checkpoint");
  EXPECT_THROW(training::load_checkpoint(dir / "junk.ckpt"), InputError);
  EXPECT_THROW(training::load_checkpoint(dir / "missing.ckpt"), InputError);
  try {  // a directory is refused by name, not with a stream error
    training::load_checkpoint(dir.path());
    ADD_FAILURE() << "a directory was loaded as a checkpoint";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file, expected a checkpoint"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, PythonTorchLoadSeesLightningLayout) {
  if (!have_python_module("torch")) GTEST_SKIP() << "SKIP: python3-torch is not installed (scripts/bootstrap.sh installs it)";
  TempDir dir;
  Tiny model;
  training::Optimization opt(model->named_parameters(), training::OptimizerKind::kAdamW,
                             {1e-3, 1e-2, 1e-3, 0.3, 1e-5, -1}, 10);
  auto state = trained_state(model, opt);
  training::save_checkpoint(dir / "x.ckpt", state, &opt);
  auto r = run_python(R"(
import sys, torch
ck = torch.load(sys.argv[1])
print(sorted(ck.keys()))
assert ck["pytorch-lightning_version"] == "2.6.1" and ck["callbacks"] == {}
print(sorted(ck["state_dict"].keys()))
print(ck["epoch"], ck["global_step"], ck["hyper_parameters"]["config"].strip())
st = ck["optimizer_states"][0]
print(sorted(st["state"].keys()), int(st["state"][0]["step"]), st["param_groups"][0]["params"])
print(repr(float(ck["state_dict"]["net.weight"].sum())))
)",
                      {(dir / "x.ckpt").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "['callbacks', 'epoch', 'global_step', 'hyper_parameters', 'lr_schedulers', 'optimizer_states', "
                  "'pytorch-lightning_version', 'salt_cpp', 'state_dict']");
  std::getline(lines, line);
  EXPECT_EQ(line, "['net.bias', 'net.weight', 'tracks_means']");
  std::getline(lines, line);
  EXPECT_EQ(line, "2 3 name: tiny");
  std::getline(lines, line);
  EXPECT_EQ(line, "[0, 1] 3 [0, 1]");
  std::getline(lines, line);
  EXPECT_NEAR(std::stod(line), model->net->weight.sum().item<double>(), 1e-6);
}

}  // namespace
}  // namespace salt::testing
