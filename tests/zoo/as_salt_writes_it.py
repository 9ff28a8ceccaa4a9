# Rewrites a salt-cpp checkpoint (argv[1]) as salt + Lightning 2.x write it
# (argv[2]), with the given pickle protocol (argv[3]): Python's torch.save of
# Lightning's dump_checkpoint dict, an OrderedDict state_dict with _metadata,
# torch's AdamW state with tensor steps, a real OneCycleLR state (its bound
# anneal function pickles the scheduler object), Lightning's loops and
# callbacks, AttributeDict hyper_parameters, and no salt-cpp entries. With a
# fourth argument `compiled`: as a `salt fit --compile` run writes it, torch.compile's
# wrapper around salt's model.model putting `_orig_mod.` into those keys (`both`:
# one parameter under both names, which is refused).
# Used by tests/training/checkpoints/salt_checkpoint_test.cpp and tests/zoo/run_zoo_config.sh.
import collections, sys, types, torch

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
compiled = sys.argv[4:] in (["compiled"], ["both"])  # both: one parameter also under its plain name
def saved_key(k):  # ModelWrapper.model = torch.compile(model.model): model.X -> model._orig_mod.X
    return "model._orig_mod." + k[len("model."):] if compiled and k.startswith("model.") else k
sd = collections.OrderedDict((saved_key(k), v.clone()) for k, v in ours["state_dict"].items())
assert not compiled or any("._orig_mod." in k for k in sd), list(sd)[:3]
if sys.argv[4:] == ["both"]:
    key = next(k for k in sd if k.startswith("model._orig_mod."))
    sd[key.replace("_orig_mod.", "")] = sd[key]
sd._metadata = collections.OrderedDict([("", {"version": 1}), ("model", {"version": 1})]
                                       + [("model._orig_mod", {"version": 1})] * compiled)

opt = ours["optimizer_states"][0]
for part in (opt, opt.get("muon", {}), opt.get("adamw", {})):  # AdamW / Lion, or HybridMuonAdamW's parts
    for s in part.get("state", {}).values():
        if "step" in s:
            s["step"] = torch.tensor(float(s["step"]))  # torch >= 1.12: a float32 tensor
    for group in part.get("param_groups", []):
        group.update(maximize=False, foreach=None, capturable=False, differentiable=False, fused=None)

# OneCycleLR's own state_dict: in this torch its anneal_func is a bound method,
# which pickles the scheduler object (and its optimizer) as a whole.
p = [torch.nn.Parameter(torch.zeros(1))]
sched = torch.optim.lr_scheduler.OneCycleLR(torch.optim.AdamW(p), max_lr=1e-3,
                                            total_steps=ours["lr_schedulers"][0]["total_steps"])
sched_state = sched.state_dict()
sched_state["last_epoch"] = ours["lr_schedulers"][0]["last_epoch"]
sched_state["_step_count"] = sched_state["last_epoch"] + 1

hparams = dict(ours["hyper_parameters"])  # LightningCLI's, as salt-cpp writes them too
score = torch.tensor(0.75)
callbacks = {
    "ModelCheckpoint{'monitor': 'val_loss', 'mode': 'min', 'every_n_train_steps': 0, 'every_n_epochs': 1, "
    "'train_time_interval': None}": {
        "monitor": "val_loss", "best_model_score": score, "best_model_path": "/x/ckpts/a.ckpt",
        "current_score": score, "dirpath": "/x/ckpts", "best_k_models": {"/x/ckpts/a.ckpt": score},
        "kth_best_model_path": "/x/ckpts/a.ckpt", "kth_value": score, "last_model_path": ""},
}
done = {"ready": 1, "completed": 1, "started": 1, "processed": 1}
# The epoch loop's batch progress as Lightning's own checkpoint holds it: inside an
# epoch (a ModelCheckpoint at on_train_batch_end) the last batch is ready, not yet completed.
progress = ours["loops"]["fit_loop"]["epoch_loop.batch_progress"]
if not progress["is_last_batch"]:
    for part in ("total", "current"):
        progress[part]["completed"] = progress[part]["ready"] - 1
loops = {
    "fit_loop": {"state_dict": {}, "epoch_loop.state_dict": {"_batches_that_stepped": ours["global_step"]},
                 "epoch_loop.batch_progress": progress, "epoch_progress": {"total": done, "current": done}},
    "validate_loop": {"state_dict": {}}, "test_loop": {"state_dict": {}}, "predict_loop": {"state_dict": {}},
}
ck = {
    "epoch": ours["epoch"], "global_step": ours["global_step"], "pytorch-lightning_version": "2.6.1",
    "state_dict": sd, "loops": loops, "callbacks": callbacks, "optimizer_states": [opt],
    "lr_schedulers": [sched_state], "MixedPrecision": {}, "hparams_name": "kwargs",
    "hyper_parameters": AttributeDict(hparams),
}
torch.save(ck, sys.argv[2], pickle_protocol=int(sys.argv[3]))
