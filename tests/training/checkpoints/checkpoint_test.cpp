// Checkpoints: written atomically, read back exactly, and readable by Python's
// torch.load as a Lightning-style dict.
#include <gtest/gtest.h>

#include <sstream>

#include "core/errors.h"
#include "support/test_support.h"
#include "models/maskformer/mask_decoder.h"
#include "training/checkpoints/checkpoint.h"
#include "training/optim/one_cycle.h"
#include "training/optim/optimization.h"
#include "training/checkpoints/rng_state.h"

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
    EXPECT_NE(std::string(e.what()).find(dir.path().string() + " is a directory, not a checkpoint: give a checkpoint file"),
              std::string::npos)
        << e.what();
  }
}

// Checkpoints of earlier salt-cpp releases were LibTorch's own pickles (typed
// dicts and lists tagged with torch.jit._pickle globals): they still open.
TEST(Checkpoint, EarlierSaltCppCheckpointsWrittenByLibTorchStillOpen) {
  TempDir dir;
  auto dict = [] { return c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get()); };
  auto root = dict(), weights = dict(), hparams = dict(), opt = dict(), group = dict(), entry = dict();
  root.insert("epoch", int64_t{1});
  root.insert("global_step", int64_t{6});
  weights.insert("net.weight", torch::arange(6, torch::kFloat32).reshape({2, 3}));
  root.insert("state_dict", weights);
  auto per_param = c10::impl::GenericDict(c10::IntType::get(), c10::AnyType::get());
  entry.insert("step", torch::tensor(6.0));
  entry.insert("exp_avg", torch::ones({2, 3}));
  entry.insert("exp_avg_sq", torch::full({2, 3}, 2.0));
  per_param.insert(int64_t{0}, entry);
  opt.insert("state", per_param);
  group.insert("params", c10::List<int64_t>({0}));
  auto groups = c10::impl::GenericList(c10::AnyType::get());
  groups.push_back(group);
  opt.insert("param_groups", groups);
  auto optimizers = c10::impl::GenericList(c10::AnyType::get());
  optimizers.push_back(opt);
  root.insert("optimizer_states", optimizers);
  root.insert("lr_schedulers", c10::impl::GenericList(c10::AnyType::get()));
  hparams.insert("config", std::string("name: old\n"));
  root.insert("hyper_parameters", hparams);
  auto bytes = torch::pickle_save(root);
  write_file(dir / "old.ckpt", std::string(bytes.begin(), bytes.end()));

  auto loaded = training::load_checkpoint(dir / "old.ckpt");
  EXPECT_EQ(loaded.epoch, 1);
  EXPECT_EQ(loaded.global_step, 6);
  EXPECT_EQ(loaded.config_yaml, "name: old\n");
  ASSERT_EQ(loaded.state_dict.size(), 1u);
  EXPECT_TRUE(torch::equal(loaded.state_dict[0].second, torch::arange(6, torch::kFloat32).reshape({2, 3})));
  ASSERT_EQ(loaded.adam_state.size(), 1u);
  EXPECT_EQ(loaded.adam_state[0].step, 6);
  EXPECT_TRUE(torch::equal(loaded.adam_state[0].exp_avg_sq, torch::full({2, 3}, 2.0)));
}

// salt's MaskDecoder state_dict holds the shared mask_net again under every
// layer and MaskFormerLoss's empty_weight: written so that salt's strict load
// accepts salt-cpp's weights, accepted (and not required) on reading.
TEST(Checkpoint, MaskDecoderStateHasSaltsSharedMaskNetKeysAndLossWeights) {
  using namespace models;
  torch::manual_seed(5);
  auto make = [] {
    MaskDecoderOptions o;
    o.embed_dim = 8;
    o.num_layers = 2;
    o.num_objects = 3;
    o.layer = MaskDecoderLayerOptions(8).n_heads(2);
    o.loss.num_classes = 2;
    o.loss.null_class_weight = 0.25;
    return MaskDecoder(o, Dense(DenseOptions(8).output_size(3)), Dense(DenseOptions(8).output_size(8)));
  };
  auto decoder = make();
  const auto state = training::module_state(*decoder);
  std::map<std::string, torch::Tensor> by_key(state.begin(), state.end());
  for (const char* layer : {"layers.0", "layers.1"})
    for (const auto& p : decoder->mask_net->named_parameters()) {
      const auto key = std::string(layer) + ".mask_net." + p.key();
      ASSERT_TRUE(by_key.count(key)) << key;
      EXPECT_TRUE(torch::equal(by_key.at(key), p.value())) << key;
    }
  ASSERT_TRUE(by_key.count("mask_loss.empty_weight"));
  EXPECT_TRUE(torch::equal(by_key.at("mask_loss.empty_weight"), torch::tensor({1.0f, 1.0f, 0.25f})));

  auto fresh = make();
  training::load_module_state(*fresh, state, "with salt's keys");
  EXPECT_TRUE(torch::equal(fresh->mask_net->parameters()[0], decoder->mask_net->parameters()[0]));
  std::vector<std::pair<std::string, torch::Tensor>> plain;  // earlier salt-cpp checkpoints: no extras
  for (const auto& [k, v] : state)
    if (k.rfind("layers.", 0) != 0 || k.find(".mask_net.") == std::string::npos)
      if (k != "mask_loss.empty_weight") plain.emplace_back(k, v);
  EXPECT_NO_THROW(training::load_module_state(*make(), plain, "without them"));
}

// Files torch.save wrote that are not checkpoints salt-cpp can use: one line each.
TEST(Checkpoint, PythonFilesThatAreNotCheckpointsAreRefusedByName) {
  ASSERT_TRUE(have_python_module("torch")) << "python3-torch is not installed (scripts/bootstrap.sh installs it)";
  TempDir dir;
  auto r = run_python(R"(
import collections, sys, torch
d = sys.argv[1]
torch.save([1, 2, 3], d + "/list.ckpt")
torch.save({"state_dict": {"w": torch.ones(2)}}, d + "/weights_only.ckpt")
class Opaque: pass
sd = collections.OrderedDict(w=torch.ones(2), b=Opaque())
torch.save({"epoch": 0, "global_step": 1, "state_dict": sd}, d + "/object.ckpt")
torch.save({"epoch": "zero", "global_step": 1, "state_dict": {}}, d + "/epoch.ckpt")
)",
                      {dir.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"list.ckpt", "the file holds a list, not a checkpoint's dict"},
      {"weights_only.ckpt", "no 'epoch' entry in the checkpoint"},
      {"object.ckpt", "state_dict entry 'b' is a __main__.Opaque object, not a tensor"},
      {"epoch.ckpt", "expected an int, found str"},
  };
  for (const auto& [file, expected] : cases) {
    try {
      training::load_checkpoint(dir / file);
      ADD_FAILURE() << file << " was read";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find((dir / file).string() + ": not a checkpoint salt-cpp reads"), std::string::npos) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
    }
  }
}

TEST(Checkpoint, PythonTorchLoadSeesLightningLayout) {
  ASSERT_TRUE(have_python_module("torch")) << "python3-torch is not installed (scripts/bootstrap.sh installs it)";
  TempDir dir;
  Tiny model;
  training::Optimization opt(model->named_parameters(), training::OptimizerKind::kAdamW,
                             {1e-3, 1e-2, 1e-3, 0.3, 1e-5, -1}, 10);
  auto state = trained_state(model, opt);
  training::save_checkpoint(dir / "x.ckpt", state, &opt);
  auto r = run_python(R"(
import pickletools, sys, torch, zipfile
# What torch >= 2.6's torch.load(weights_only=True) allows: no global outside
# its safe list, only opcodes its restricted unpickler implements. (Debian's
# torch 1.13 cannot check it itself: its weights-only reader lacks BINFLOAT.)
pkl = next(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.endswith("/data.pkl"))
ops, globals_ = set(), set()
for op, arg, _ in pickletools.genops(zipfile.ZipFile(sys.argv[1]).read(pkl)):
    ops.add(op.name)
    if op.name == "GLOBAL" and not (arg.startswith("torch ") and arg.endswith("Storage")): globals_.add(arg)
safe = {"collections OrderedDict", "torch._utils _rebuild_tensor_v2"}  # and torch's storage types
allowed_ops = {"PROTO", "GLOBAL", "EMPTY_TUPLE", "REDUCE", "EMPTY_DICT", "EMPTY_LIST", "MARK", "SETITEMS",
               "APPENDS", "TUPLE", "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT", "BINUNICODE",
               "BINPERSID", "NEWTRUE", "NEWFALSE", "NONE", "STOP"}
assert globals_ <= safe, globals_ - safe
assert ops <= allowed_ops, ops - allowed_ops
ck = torch.load(sys.argv[1])
print(sorted(ck.keys()))
assert ck["pytorch-lightning_version"] == "2.6.1" and list(ck["callbacks"])[0].startswith("Checkpoint{")
print(sorted(ck["state_dict"].keys()))
print(ck["epoch"], ck["global_step"], ck["salt_cpp"]["config"].strip())
st = ck["optimizer_states"][0]
print(sorted(st["state"].keys()), int(st["state"][0]["step"]), st["param_groups"][0]["params"])
print(repr(float(ck["state_dict"]["net.weight"].sum())))
)",
                      {(dir / "x.ckpt").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "['callbacks', 'epoch', 'global_step', 'loops', 'lr_schedulers', 'optimizer_states', "
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

// Lightning's resume (`_restore_optimizers_and_schedulers`) builds salt's AdamW and
// OneCycleLR afresh, loads the checkpoint's optimizer state into the optimizer and
// its scheduler state into the scheduler, and steps on: the restored param group
// must hold every entry OneCycleLR reads while stepping (salt's `salt fit
// --ckpt_path` on a salt-cpp checkpoint once failed with KeyError 'base_momentum').
TEST(Checkpoint, PythonContinuesItsScheduleAsLightningRestoresIt) {
  ASSERT_TRUE(have_python_module("torch")) << "python3-torch is not installed (scripts/bootstrap.sh installs it)";
  TempDir dir;
  Tiny model;
  const config::LrsConfig lrs{1e-3, 1e-2, 1e-3, 0.3, 1e-5, -1};
  training::Optimization opt(model->named_parameters(), training::OptimizerKind::kAdamW, lrs, 10);
  auto state = trained_state(model, opt);
  training::save_checkpoint(dir / "x.ckpt", state, &opt);
  auto r = run_python(R"(
import sys, torch
ck = torch.load(sys.argv[1])
net = torch.nn.Linear(3, 2)
# salt's ModelWrapper.configure_optimizers for lrs_config {initial 1e-3, max 1e-2, end 1e-3, pct_start 0.3}
opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=1e-5)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=10, div_factor=10.0,
                                            final_div_factor=1.0, pct_start=0.3, cycle_momentum=True)
opt.load_state_dict(ck["optimizer_states"][0])
sched.load_state_dict(ck["lr_schedulers"][0])
net(torch.ones(4, 3)).pow(2).sum().backward()
opt.step()
sched.step()
g = opt.param_groups[0]
print(repr(g["lr"]), repr(g["betas"][0]), sched.last_epoch)
)",
                      {(dir / "x.ckpt").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream line(r.out);
  double lr = 0, beta1 = 0;
  int64_t last_epoch = 0;
  line >> lr >> beta1 >> last_epoch;
  // after 3 steps here and 1 in Python, the 5th step (index 4) runs with these
  const training::OneCycleSchedule schedule(lrs, 10);
  EXPECT_EQ(last_epoch, 4);
  EXPECT_NEAR(lr, schedule.lr(4), 1e-15);
  EXPECT_NEAR(beta1, schedule.beta1(4), 1e-15);
}

}  // namespace
}  // namespace salt::testing
