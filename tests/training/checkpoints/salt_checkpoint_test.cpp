// A model trained by salt opens in salt-cpp: a checkpoint laid out exactly as
// Lightning's dump_checkpoint writes it through Python's torch.save (OrderedDict
// state_dict with _metadata, torch's AdamW state with tensor steps, OneCycleLR's
// state with its bound anneal function, Lightning's loops and callbacks, the
// CLI's hyper_parameters and no salt-cpp entries), in a run directory whose
// config.yaml has LightningCLI's top-level keys. Python's torch writes it here
// from a salt-cpp run, so the numbers can be compared bitwise.
#include <yaml-cpp/yaml.h>

#include "training/checkpoints/checkpoint.h"
#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

// Python's rewrite of a salt-cpp checkpoint as salt + Lightning write it.
std::string as_salt_writes_it() { return read_file(source_dir() / "tests" / "zoo" / "as_salt_writes_it.py"); }

// config.yaml as LightningCLI writes it: the CLI's own keys at the top level, which
// salt-cpp's config.yaml already has (a second copy would now be refused as a key
// given twice).
void as_salt_config(const fs::path& from, const fs::path& to) {
  const auto text = read_file(from);
  for (const char* key : {"\noptimizer: null\n", "\nlr_scheduler: null\n"})
    EXPECT_NE(text.find(key), std::string::npos) << from << " lacks LightningCLI's" << key;
  write_file(to, text);
}

// The small GN2's four probability columns of two prediction files, bit for bit (h5py).
void expect_same_predictions(const fs::path& a, const fs::path& b) {
  auto same = run_python(R"(
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1])["jets"][:], h5py.File(sys.argv[2])["jets"][:]
cols = [c for c in a.dtype.names if c.startswith("GN2_cpu_")]
assert len(cols) == 4 and len(a) == 500, (cols, len(a))
print(all(np.array_equal(a[c], b[c]) for c in cols))
)",
                         {a.string(), b.string()});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out, "True\n") << a << " " << b;
}

}  // namespace

TEST_F(FitTest, ACheckpointWrittenBySaltOpensInEveryCommand) {
  ASSERT_TRUE(have_python_module("yaml") && have_python_module("torch")) << "python3-torch or python3-yaml missing";
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "1", "--data.num_train", "1000", "-ls", "ours"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto ours = dir / "logs" / "GN2_cpu_ours";
  const auto our_ckpt = checkpoints(ours).front();
  // scripts/lightning_checks.py, which the GPU check runs under torch 2.x and Lightning,
  // here under Debian's torch: the checkpoint loads and has Lightning's keys.
  const auto checks = run_process({"/usr/bin/python3", (source_dir() / "scripts" / "lightning_checks.py").string(),
                                   ours.string()});
  EXPECT_EQ(checks.exit_code, 0) << checks.out << checks.err;
  EXPECT_NE(checks.out.find(our_ckpt.filename().string() + ": torch "), std::string::npos) << checks.out;
  EXPECT_NE(checks.out.find("Lightning's keys present"), std::string::npos) << checks.out;

  // salt's run directory: the same model, its checkpoint as salt wrote it.
  const auto theirs = dir / "logs" / "GN2_salt";
  fs::create_directories(theirs / "ckpts");
  as_salt_config(ours / "config.yaml", theirs / "config.yaml");
  for (const auto* f : {"norm_dict.yaml", "class_dict.yaml"})
    if (fs::exists(ours / f)) fs::copy_file(ours / f, theirs / f);
  const auto their_ckpt = theirs / "ckpts" / our_ckpt.filename();
  auto r = run_python(as_salt_writes_it(), {our_ckpt.string(), their_ckpt.string(), "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // salt test: the same predictions, bit for bit.
  auto test_ours = salt("test", {"-c", (ours / "config.yaml").string(), "--ckpt_path", our_ckpt.string()});
  ASSERT_EQ(test_ours.exit_code, 0) << test_ours.err;
  auto test_theirs = salt("test", {"-c", (theirs / "config.yaml").string(), "--ckpt_path", their_ckpt.string()});
  ASSERT_EQ(test_theirs.exit_code, 0) << test_theirs.err;
  const auto preds = [](const fs::path& ckpt) {
    return ckpt.parent_path() / (ckpt.stem().string() + "__test_ttbar.h5");
  };
  expect_same_predictions(preds(our_ckpt), preds(their_ckpt));

  // salt validate and to_onnx read it too.
  auto val = salt("validate", {"-c", (theirs / "config.yaml").string(), "--ckpt_path", their_ckpt.string()});
  EXPECT_EQ(val.exit_code, 0) << val.err;
  auto onnx = salt("to_onnx", {"--ckpt_path", their_ckpt.string(), "--check_jets", "20", "--force"});
  EXPECT_EQ(onnx.exit_code, 0) << onnx.err;
  EXPECT_TRUE(fs::exists(theirs / "network.onnx"));

  // A checkpoint on its own: the model comes from its hyper_parameters (the data
  // for the ONNX Runtime check from --test_file).
  fs::create_directories(dir / "alone");
  fs::copy_file(their_ckpt, dir / "alone" / "x.ckpt");
  auto alone = salt("to_onnx", {"--ckpt_path", (dir / "alone" / "x.ckpt").string(), "--check_jets", "20", "--force",
                                "--test_file", (dir / "data/toy/pp_output_test_ttbar.h5").string(), "--output",
                                (dir / "alone" / "x.onnx").string()});
  EXPECT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_NE(alone.err.find("the model comes from the checkpoint's hyper_parameters"), std::string::npos) << alone.err;
  EXPECT_TRUE(fs::exists(dir / "alone" / "x.onnx"));

  // A config whose test file is not on this machine (salt's base.yaml names one on
  // /eos): the check draws random jets, as salt's own check does.
  auto edited = YAML::LoadFile((theirs / "config.yaml").string());
  edited["data"]["test_file"] = "/eos/atlas/no/such/pp_output_test_ttbar.h5";
  write_file(dir / "alone" / "config.yaml", YAML::Dump(edited));
  auto random = salt("to_onnx", {"--ckpt_path", their_ckpt.string(), "--config", (dir / "alone" / "config.yaml").string(),
                                 "--check_jets", "20", "--force", "--require_check", "--output",
                                 (dir / "alone" / "random.onnx").string()});
  EXPECT_EQ(random.exit_code, 0) << random.err;
  EXPECT_NE(random.err.find("checking the export on random jets, as salt does"), std::string::npos) << random.err;
  EXPECT_NE(random.err.find("ONNX Runtime vs salt-cpp on 23 random jets"), std::string::npos) << random.err;
  EXPECT_TRUE(fs::exists(dir / "alone" / "random.onnx"));
  // A --test_file given on the command line must be there.
  auto missing = salt("to_onnx", {"--ckpt_path", their_ckpt.string(), "--check_jets", "20", "--force", "--test_file",
                                  "/eos/atlas/no/such/test.h5", "--output", (dir / "alone" / "missing.onnx").string()});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(error_lines(missing.err), 1) << missing.err;
  EXPECT_NE(missing.err.find("/eos/atlas/no/such/test.h5"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(dir / "alone" / "missing.onnx"));
}

// salt's `--compile` runs save torch.compile's `model._orig_mod.` keys; every command
// opens them as salt does (the prefix dropped), giving the plain checkpoint's predictions.
TEST_F(FitTest, ACompiledSaltRunsCheckpointPredictsAsItsPlainTwin) {
  ASSERT_TRUE(have_python_module("yaml") && have_python_module("torch")) << "python3-torch or python3-yaml missing";
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "1", "--data.num_train", "1000", "-ls", "ours"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto ours = dir / "logs" / "GN2_cpu_ours";
  const auto our_ckpt = checkpoints(ours).front();
  const auto plain = dir / "plain.ckpt", compiled = dir / "compiled.ckpt";
  ASSERT_EQ(run_python(as_salt_writes_it(), {our_ckpt.string(), plain.string(), "2"}).exit_code, 0);
  auto r = run_python(as_salt_writes_it(), {our_ckpt.string(), compiled.string(), "2", "compiled"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto keys = training::load_checkpoint(compiled).state_dict;
  EXPECT_EQ(keys.size(), training::load_checkpoint(plain).state_dict.size());
  for (const auto& [key, tensor] : keys) EXPECT_EQ(key.find("_orig_mod"), std::string::npos) << key;

  for (const auto& ckpt : {plain, compiled}) {
    auto test = salt("test", {"-c", (ours / "config.yaml").string(), "--ckpt_path", ckpt.string()});
    ASSERT_EQ(test.exit_code, 0) << test.err;
  }
  expect_same_predictions(dir / "plain__test_ttbar.h5", dir / "compiled__test_ttbar.h5");
  auto val = salt("validate", {"-c", (ours / "config.yaml").string(), "--ckpt_path", compiled.string()});
  EXPECT_EQ(val.exit_code, 0) << val.err;
  auto onnx = salt("to_onnx", {"--ckpt_path", compiled.string(), "--config", (ours / "config.yaml").string(),
                               "--check_jets", "20", "--force", "--output", (dir / "compiled.onnx").string()});
  EXPECT_EQ(onnx.exit_code, 0) << onnx.err;
  EXPECT_TRUE(fs::exists(dir / "compiled.onnx"));

  // One parameter under both names: which one salt would take is an accident of order.
  auto both = run_python(as_salt_writes_it(), {our_ckpt.string(), (dir / "both.ckpt").string(), "2", "both"});
  ASSERT_EQ(both.exit_code, 0) << both.err;
  auto refused = salt("test", {"-c", (ours / "config.yaml").string(), "--ckpt_path", (dir / "both.ckpt").string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_EQ(error_lines(refused.err), 1) << refused.err;
  EXPECT_NE(refused.err.find("one parameter with and without torch.compile's '_orig_mod.'"), std::string::npos)
      << refused.err;
}

// Two epochs straight, and the same run continued after epoch 0 from its checkpoint
// rewritten as salt writes it (Python's torch.save of Lightning's dict, the
// optimizer's moments under salt's parameter order): the same weights, bit for bit.
// The batches go in file order (overfit_batches: every batch, unshuffled): a salt
// checkpoint holds no generator state, so a shuffled epoch after it takes the order
// salt draws after its re-seed (the next test), not the uninterrupted run's.
class SaltLayoutFit : public FitTest {
 protected:
  // compiled: the checkpoint as a `salt fit --compile` run writes it.
  void continue_from_salt_layout(const std::vector<std::string>& extra, bool compiled = false);
  // 10 shuffled batches a epoch, 2 epochs, a checkpoint every 5 steps
  // (checkpoints/mid-step=N.ckpt, with its epoch's order) besides salt's Checkpoint.
  std::vector<std::string> with_mid_checkpoints(const std::string& suffix) {
    write_file(dir / "mid.yaml", R"(trainer:
  callbacks:
    - class_path: salt.callbacks.Checkpoint
      init_args: {monitor_loss: val/jets_classification_loss}
    - class_path: lightning.pytorch.callbacks.ModelCheckpoint
      init_args: {every_n_train_steps: 5, save_top_k: -1, filename: "mid-{step}"}
)");
    return small_gn2({"-c", (dir / "mid.yaml").string(), "--data.num_train", "1000", "--data.batch_size", "100",
                      "--trainer.max_epochs", "2", "-ls", suffix});
  }
};

void SaltLayoutFit::continue_from_salt_layout(const std::vector<std::string>& extra, bool compiled) {
  ASSERT_TRUE(have_python_module("yaml") && have_python_module("torch")) << "python3-torch or python3-yaml missing";
  std::vector<std::string> base = {"--data.num_train", "1000", "--trainer.overfit_batches", "4"};
  base.insert(base.end(), extra.begin(), extra.end());
  base.push_back("--trainer.max_epochs");
  auto args = [&](const std::string& epochs, const std::string& suffix) {
    auto a = small_gn2(base);
    a.insert(a.end(), {epochs, "-ls", suffix});
    return a;
  };
  ASSERT_EQ(salt("fit", args("2", "straight")).exit_code, 0);
  const auto first = checkpoints(dir / "logs" / "GN2_cpu_straight").front();  // after epoch 0
  ASSERT_NE(first.filename().string().find("epoch=000"), std::string::npos) << first;
  const auto salt_ckpt = dir / "salt.ckpt";
  std::vector<std::string> py_args = {first.string(), salt_ckpt.string(), "4"};
  if (compiled) py_args.push_back("compiled");
  auto r = run_python(as_salt_writes_it(), py_args);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  auto cont = salt("fit", [&] {
    auto a = args("2", "continued");
    a.insert(a.end(), {"--ckpt_path", salt_ckpt.string()});
    return a;
  }());
  ASSERT_EQ(cont.exit_code, 0) << cont.err;
  EXPECT_NE(cont.err.find("resuming from " + salt_ckpt.string() + " (epoch 0"), std::string::npos) << cont.err;
  const auto last = [&](const std::string& run) {
    return training::load_checkpoint(checkpoints(dir / "logs" / ("GN2_cpu_" + run)).back());
  };
  const auto a = last("straight"), b = last("continued");
  EXPECT_EQ(a.global_step, b.global_step);
  ASSERT_EQ(a.state_dict.size(), b.state_dict.size());
  for (size_t i = 0; i < a.state_dict.size(); ++i)
    EXPECT_TRUE(torch::equal(a.state_dict[i].second, b.state_dict[i].second)) << a.state_dict[i].first;
}

TEST_F(SaltLayoutFit, ContinuingASaltCheckpointEqualsTheUninterruptedRun) { continue_from_salt_layout({}); }
TEST_F(SaltLayoutFit, ContinuingACompiledSaltRunsCheckpointEqualsTheUninterruptedRun) {
  continue_from_salt_layout({}, /*compiled=*/true);
}

// salt's HybridMuonAdamW: Muon's momentum buffers and AdamW's moments, two param groups.
TEST_F(SaltLayoutFit, ContinuingASaltHybridMuonAdamWCheckpointEqualsTheUninterruptedRun) {
  continue_from_salt_layout({"--model.optimizer", "HybridMuonAdamW"});
}

// salt resumes in a new process: seed_everything, the model built (the same draws),
// the weights loaded, and the next epoch's batch order drawn from the generator as it
// stands after the build: the order a fresh run's epoch 0 had. salt-cpp does the same
// from a checkpoint salt wrote (no salt_cpp generator state), and keeps its exact
// resume for its own checkpoints (the uninterrupted run's order).
TEST_F(SaltLayoutFit, ASaltCheckpointResumesWithTheOrderSaltDrawsAfterItsReseed) {
  ASSERT_TRUE(have_python_module("yaml") && have_python_module("torch")) << "python3-torch or python3-yaml missing";
  auto args = [&](const std::string& suffix) { return with_mid_checkpoints(suffix); };
  ASSERT_EQ(salt("fit", args("straight")).exit_code, 0);
  const auto straight = dir / "logs" / "GN2_cpu_straight";
  const auto salt_ckpt = dir / "salt.ckpt";
  auto r = run_python(as_salt_writes_it(), {checkpoints(straight).front().string(), salt_ckpt.string(), "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto cont_args = args("continued");
  cont_args.insert(cont_args.end(), {"--ckpt_path", salt_ckpt.string()});
  auto cont = salt("fit", cont_args);
  ASSERT_EQ(cont.exit_code, 0) << cont.err;
  const auto order = [&](const fs::path& run, int step) {
    const auto ck = training::load_checkpoint(run / "checkpoints" / ("mid-step=" + std::to_string(step) + ".ckpt"));
    EXPECT_TRUE(ck.epoch_order.defined()) << run << " step " << step;
    return ck.epoch_order.defined() ? ck.epoch_order : torch::zeros({0}, torch::kLong);
  };
  const auto epoch0 = order(straight, 5), epoch1 = order(straight, 15), resumed = order(dir / "logs" / "GN2_cpu_continued", 15);
  EXPECT_EQ(epoch0.numel(), 10);
  EXPECT_TRUE(torch::equal(resumed, epoch0)) << resumed << epoch0;
  EXPECT_FALSE(torch::equal(epoch1, epoch0));
}

// From salt's checkpoint saved inside an epoch (its loops count the batches done),
// Lightning starts that epoch over: a fresh iterator, so the order a fresh run's
// epoch 0 had, of which it trains the batches left (measured against the real salt:
// docs/migrating.md). salt-cpp moves those first batches behind the ones it skips.
TEST_F(SaltLayoutFit, ASaltMidEpochCheckpointStartsItsEpochOverAsLightningDoes) {
  ASSERT_TRUE(have_python_module("yaml") && have_python_module("torch")) << "python3-torch or python3-yaml missing";
  auto args = [&](const std::string& suffix) { return with_mid_checkpoints(suffix); };
  ASSERT_EQ(salt("fit", args("straight")).exit_code, 0);
  const auto straight = dir / "logs" / "GN2_cpu_straight";
  const auto salt_ckpt = dir / "salt_mid.ckpt";  // epoch 0, 5 of its 10 batches done
  auto r = run_python(as_salt_writes_it(), {(straight / "checkpoints" / "mid-step=5.ckpt").string(), salt_ckpt.string(), "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto cont_args = args("continued");
  cont_args.insert(cont_args.end(), {"--ckpt_path", salt_ckpt.string()});
  auto cont = salt("fit", cont_args);
  ASSERT_EQ(cont.exit_code, 0) << cont.err;
  const auto continued = dir / "logs" / "GN2_cpu_continued";
  const auto epoch0 = training::load_checkpoint(straight / "checkpoints" / "mid-step=5.ckpt").epoch_order;
  const auto resumed = training::load_checkpoint(continued / "checkpoints" / "mid-step=10.ckpt").epoch_order;
  ASSERT_EQ(epoch0.numel(), 10);
  ASSERT_EQ(resumed.numel(), 10);
  // The restarted epoch has a fresh run's epoch-0 order, and a checkpoint inside it
  // records the 5 batches the restart skipped: the 5 left are epoch 0's first 5.
  EXPECT_TRUE(torch::equal(resumed, epoch0)) << resumed << epoch0;
  EXPECT_EQ(training::load_checkpoint(continued / "checkpoints" / "mid-step=10.ckpt").epoch_restart, 5);
  EXPECT_TRUE(fs::exists(continued / "checkpoints" / "mid-step=20.ckpt"));  // 5 + 10 steps after step 5
}

// The other direction: a salt-cpp run's checkpoint and config.yaml hold what
// salt's CLI, Lightning's resume and ModelWrapper.load_from_checkpoint read
// (Lightning 2.6's dump_checkpoint and SaltCLI's saved config, from their source).
TEST_F(FitTest, WhatSaltCppWritesIsLaidOutAsSaltWritesIt) {
  ASSERT_TRUE(have_python_module("yaml") && have_python_module("torch")) << "python3-torch or python3-yaml missing";
  // 1000 jets in batches of 250, 500 validation jets: N = 4, V = 2; epoch 1 ends at step 8.
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "2", "--data.num_train", "1000", "-ls", "run"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto run = dir / "logs" / "GN2_cpu_run";
  auto r = run_python(R"(
import sys, torch, yaml
ck = torch.load(sys.argv[1])
print(list(ck))
z4 = {"ready": 0, "completed": 0, "started": 0, "processed": 0}
def p4(n): return {"ready": n, "completed": n, "started": n, "processed": n}
idle = {"state_dict": {}, "batch_progress": {"total": z4, "current": z4, "is_last_batch": False}}
expected = {
 "fit_loop": {
  "state_dict": {},
  "epoch_loop.state_dict": {"_batches_that_stepped": 8},
  "epoch_loop.batch_progress": {"total": p4(8), "current": p4(4), "is_last_batch": True},
  "epoch_loop.scheduler_progress": {"total": {"ready": 8, "completed": 8}, "current": {"ready": 4, "completed": 4}},
  "epoch_loop.automatic_optimization.state_dict": {},
  "epoch_loop.automatic_optimization.optim_progress": {"optimizer": {
      "step": {"total": {"ready": 8, "completed": 8}, "current": {"ready": 4, "completed": 4}},
      "zero_grad": {"total": {"ready": 8, "completed": 8, "started": 8},
                    "current": {"ready": 4, "completed": 4, "started": 4}}}},
  "epoch_loop.manual_optimization.state_dict": {},
  "epoch_loop.manual_optimization.optim_step_progress": {"total": {"ready": 0, "completed": 0},
                                                         "current": {"ready": 0, "completed": 0}},
  "epoch_loop.val_loop.state_dict": {},
  "epoch_loop.val_loop.batch_progress": {"total": p4(2), "current": p4(2), "is_last_batch": True},
  "epoch_progress": {"total": {"ready": 2, "completed": 1, "started": 2, "processed": 2},
                     "current": {"ready": 2, "completed": 1, "started": 2, "processed": 2}},
 },
 "validate_loop": idle, "test_loop": idle,
 "predict_loop": {"state_dict": {}, "batch_progress": {"total": z4, "current": z4}},
}
assert ck["loops"] == expected, ck["loops"]
assert (ck["epoch"], ck["global_step"]) == (1, 8)
(key, cb), = ck["callbacks"].items()
assert key == ("Checkpoint{'monitor': None, 'mode': 'min', 'every_n_train_steps': 0, 'every_n_epochs': 1, "
               "'train_time_interval': None}"), key
assert cb["best_model_path"] == sys.argv[1] and float(cb["kth_value"]) == float("inf"), cb
hp = ck["hyper_parameters"]
assert ck["hparams_name"] == "kwargs" and hp["_instantiator"] == "lightning.pytorch.cli.instantiate_module"
assert (hp["name"], hp["global_object"]) == ("GN2_cpu", "jets"), (hp["name"], hp["global_object"])
assert sorted(hp["norm_config"]) == ["global_object", "input_map", "norm_dict", "variables"], hp["norm_config"]
assert type(hp["lrs_config"]["max"]) is float and type(hp["model"]["init_args"]["init_nets"]) is list

config = yaml.safe_load(open(sys.argv[2]))
assert all(config[k] is None for k in ("optimizer", "lr_scheduler", "weights_only")), config  # LightningCLI's
for where, model in (("config.yaml", config["model"]), ("hyper_parameters", hp)):
    args = model["model"]["init_args"]
    assert "depth" not in args["encoder"]["init_args"], where
    for net in args["init_nets"]:
        assert "input_size" not in net["dense_config"] and net["variables"] == config["data"]["variables"], where
    jet = next(t for t in args["tasks"]["init_args"]["modules"] if t["init_args"]["name"] == "jets_classification")
    assert jet["init_args"]["class_names"] == ["bjets", "cjets", "ujets", "taujets"], (where, jet)
assert "name" not in config["model"] and "global_object" not in config["model"]  # link targets
assert not {"warn_input_sigma", "max_input_sigma"} & set(config["data"]), config["data"]  # salt-cpp's own, at default
print("ok")
)",
                      {checkpoints(run).back().string(), (run / "config.yaml").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "['epoch', 'global_step', 'pytorch-lightning_version', 'state_dict', 'loops', 'callbacks', "
            "'optimizer_states', 'lr_schedulers', 'hparams_name', 'hyper_parameters', 'salt_cpp']\n"
            "ok\n");

  // and salt-cpp reads its own salt-readable config.yaml back
  auto test = salt("test", {"-c", (run / "config.yaml").string()});
  EXPECT_EQ(test.exit_code, 0) << test.err;
}

}  // namespace salt::testing
