// A model trained by salt opens in salt-cpp: a checkpoint laid out exactly as
// Lightning's dump_checkpoint writes it through Python's torch.save (OrderedDict
// state_dict with _metadata, torch's AdamW state with tensor steps, OneCycleLR's
// state with its bound anneal function, Lightning's loops and callbacks, the
// CLI's hyper_parameters and no salt-cpp entries), in a run directory whose
// config.yaml has LightningCLI's top-level keys. Python's torch writes it here
// from a salt-cpp run, so the numbers can be compared bitwise.
#include "training/checkpoint.h"
#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

// Rewrites a salt-cpp checkpoint (argv[1]) as salt + Lightning 2.x would have
// written it (argv[2]), with the given pickle protocol (argv[3]).
const char* kAsSaltWritesIt = R"(
import collections, sys, types, torch, yaml

def home(cls, module):  # Lightning's classes, importable by name for pickle
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    setattr(sys.modules[module], cls.__name__, cls)
    cls.__module__ = module

class AttributeDict(dict):
    pass
home(AttributeDict, "lightning.fabric.utilities.data")

ours = torch.load(sys.argv[1])
sd = collections.OrderedDict((k, v.clone()) for k, v in ours["state_dict"].items())
sd._metadata = collections.OrderedDict([("", {"version": 1}), ("model", {"version": 1})])

opt = ours["optimizer_states"][0]
for s in opt["state"].values():
    s["step"] = torch.tensor(float(s["step"]))  # torch >= 1.12: a float32 tensor
group = opt["param_groups"][0]
group.update(maximize=False, foreach=None, capturable=False, differentiable=False, fused=None,
             base_momentum=0.85, max_momentum=0.95)

# OneCycleLR's own state_dict: in this torch its anneal_func is a bound method,
# which pickles the scheduler object (and its optimizer) as a whole.
p = [torch.nn.Parameter(torch.zeros(1))]
sched = torch.optim.lr_scheduler.OneCycleLR(torch.optim.AdamW(p), max_lr=1e-3,
                                            total_steps=ours["lr_schedulers"][0]["total_steps"])
sched_state = sched.state_dict()
sched_state["last_epoch"] = ours["lr_schedulers"][0]["last_epoch"]
sched_state["_step_count"] = sched_state["last_epoch"] + 1

config = yaml.safe_load(ours["hyper_parameters"]["config"])
hparams = dict(config["model"])
hparams["_instantiator"] = "lightning.pytorch.cli.instantiate_module"
score = torch.tensor(0.75)
callbacks = {
    "ModelCheckpoint{'monitor': 'val_loss', 'mode': 'min', 'every_n_train_steps': 0, 'every_n_epochs': 1, "
    "'train_time_interval': None}": {
        "monitor": "val_loss", "best_model_score": score, "best_model_path": "/x/ckpts/a.ckpt",
        "current_score": score, "dirpath": "/x/ckpts", "best_k_models": {"/x/ckpts/a.ckpt": score},
        "kth_best_model_path": "/x/ckpts/a.ckpt", "kth_value": score, "last_model_path": ""},
}
done = {"ready": 1, "completed": 1, "started": 1, "processed": 1}
loops = {
    "fit_loop": {"state_dict": {}, "epoch_loop.state_dict": {"_batches_that_stepped": ours["global_step"]},
                 "epoch_progress": {"total": done, "current": done}},
    "validate_loop": {"state_dict": {}}, "test_loop": {"state_dict": {}}, "predict_loop": {"state_dict": {}},
}
ck = {
    "epoch": ours["epoch"], "global_step": ours["global_step"], "pytorch-lightning_version": "2.6.1",
    "state_dict": sd, "loops": loops, "callbacks": callbacks, "optimizer_states": [opt],
    "lr_schedulers": [sched_state], "MixedPrecision": {}, "hparams_name": "kwargs",
    "hyper_parameters": AttributeDict(hparams),
}
torch.save(ck, sys.argv[2], pickle_protocol=int(sys.argv[3]))
)";

// config.yaml as LightningCLI writes it: the CLI's own keys at the top level.
void as_salt_config(const fs::path& from, const fs::path& to) {
  write_file(to, read_file(from) + "optimizer: null\nlr_scheduler: null\nweights_only: null\n");
}

}  // namespace

TEST_F(FitTest, ACheckpointWrittenBySaltOpensInEveryCommand) {
  ASSERT_TRUE(have_python_module("yaml") && have_python_module("torch")) << "python3-torch or python3-yaml missing";
  auto fit = salt("fit", small_gn2({"--trainer.max_epochs", "1", "--data.num_train", "1000", "-ls", "ours"}));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto ours = dir / "logs" / "GN2_cpu_ours";
  const auto our_ckpt = checkpoints(ours).front();

  // salt's run directory: the same model, its checkpoint as salt wrote it.
  const auto theirs = dir / "logs" / "GN2_salt";
  fs::create_directories(theirs / "ckpts");
  as_salt_config(ours / "config.yaml", theirs / "config.yaml");
  for (const auto* f : {"norm_dict.yaml", "class_dict.yaml"})
    if (fs::exists(ours / f)) fs::copy_file(ours / f, theirs / f);
  const auto their_ckpt = theirs / "ckpts" / our_ckpt.filename();
  auto r = run_python(kAsSaltWritesIt, {our_ckpt.string(), their_ckpt.string(), "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // salt test: the same predictions, bit for bit.
  auto test_ours = salt("test", {"-c", (ours / "config.yaml").string(), "--ckpt_path", our_ckpt.string()});
  ASSERT_EQ(test_ours.exit_code, 0) << test_ours.err;
  auto test_theirs = salt("test", {"-c", (theirs / "config.yaml").string(), "--ckpt_path", their_ckpt.string()});
  ASSERT_EQ(test_theirs.exit_code, 0) << test_theirs.err;
  const auto preds = [](const fs::path& ckpt) {
    return ckpt.parent_path() / (ckpt.stem().string() + "__test_ttbar.h5");
  };
  auto same = run_python(R"(
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1])["jets"][:], h5py.File(sys.argv[2])["jets"][:]
cols = [c for c in a.dtype.names if c.startswith("GN2_cpu_")]
assert len(cols) == 4 and len(a) == 500, (cols, len(a))
print(all(np.array_equal(a[c], b[c]) for c in cols))
)",
                         {preds(our_ckpt).string(), preds(their_ckpt).string()});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out, "True\n");

  // salt validate and to_onnx read it too.
  auto val = salt("validate", {"-c", (theirs / "config.yaml").string(), "--ckpt_path", their_ckpt.string()});
  EXPECT_EQ(val.exit_code, 0) << val.err;
  auto onnx = salt("to_onnx", {"--ckpt_path", their_ckpt.string(), "--check_jets", "20", "--force"});
  EXPECT_EQ(onnx.exit_code, 0) << onnx.err;
  EXPECT_TRUE(fs::exists(theirs / "network.onnx"));
}

TEST_F(FitTest, ContinuingASaltCheckpointEqualsTheUninterruptedRun) {
  ASSERT_TRUE(have_python_module("yaml") && have_python_module("torch")) << "python3-torch or python3-yaml missing";
  const std::vector<std::string> base = {"--data.num_train", "1000", "--trainer.max_epochs"};
  auto args = [&](const std::string& epochs, const std::string& suffix) {
    auto a = small_gn2(base);
    a.insert(a.end(), {epochs, "-ls", suffix});
    return a;
  };
  ASSERT_EQ(salt("fit", args("2", "straight")).exit_code, 0);
  const auto first = checkpoints(dir / "logs" / "GN2_cpu_straight").front();  // after epoch 0
  ASSERT_NE(first.filename().string().find("epoch=000"), std::string::npos) << first;
  const auto salt_ckpt = dir / "salt.ckpt";
  auto r = run_python(kAsSaltWritesIt, {first.string(), salt_ckpt.string(), "4"});
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

}  // namespace salt::testing
