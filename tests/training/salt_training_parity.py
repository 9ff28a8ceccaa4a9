"""salt-cpp trains as the real salt did: against a fixture of tests/fixtures/salt_training,
which salt itself wrote (make_fixture.sh there: salt's GN2.yaml with configs/GN2_cpu.yaml
over it, 20 steps of batch 100 on `salt toydata`'s 2000 jets, CPU, fp32, seed 42;
GN2_cpu_tuners.json: with encoder dropout, 2 epochs, and Lightning's BatchSizeFinder and
LearningRateFinder first, as its `settings` say). Checked:
  - the toy data is the data salt trained on (sha256);
  - the initial weights are salt's bit for bit (each tensor's bit-pattern checksum);
  - the batch size salt trained with (a BatchSizeFinder's) and the batches in salt's
    order, every epoch (a mid-epoch checkpoint's epoch_order against the first jet of
    each of salt's batches);
  - a LearningRateFinder's sweep: its learning rates salt's, its smoothed losses as
    the steps' (below);
  - each step's learning rate and beta1 are salt's, its losses within 1e-5 relative of
    salt's or no farther from salt's float64 fit than three times the farthest salt's
    float32 fit has been from it so far (float32 round-off, which training amplifies);
  - at the end each parameter's sum and norm no farther from salt's float64 fit than
    three times salt's own float32 fit is (plus 1e-5 of the norm; as for the steps:
    parameters whose gradient is zero in exact arithmetic, as the pooling gate's bias,
    take Adam's lr-sized steps from round-off alone), and the validation loss
    likewise.
Usage: salt_training_parity.py SALT_BIN INIT_BIN SOURCE_DIR WORK [FIXTURE]
  FIXTURE: a file name in tests/fixtures/salt_training (GN2_cpu.json)
"""

import csv
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch
import yaml

salt_bin, init_bin, source, work = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
fixture = json.loads((source / "tests/fixtures/salt_training" / (sys.argv[5] if len(sys.argv) > 5 else "GN2_cpu.json"))
                     .read_text())
settings = fixture.get("settings", {})
overlays = settings.get("overlays", ["configs/GN2_cpu.yaml"])
epochs, mid_step = settings.get("epochs", 1), settings.get("mid_step", 10)
batch = fixture.get("batch_size", 100)  # what salt trained with
failures = []


def check(ok: bool, what: str) -> None:
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def run(*args: str) -> None:
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{args[0]} failed ({r.returncode}): {r.stderr[-2000:]}")


shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
data = work / "data"
run(salt_bin, "toydata", "-o", str(data), "--num_train", "2000", "--num_val", "200", "--num_test", "10")
for name, digest in fixture["data_sha256"].items():
    check(hashlib.sha256((data / name).read_bytes()).hexdigest() == digest, f"{name} is not the file salt trained on")

configs = ["-c", str(source / "tests/fixtures/salt_training/GN2.yaml")]
for o in overlays:
    configs += ["-c", str(source / o)]
common = ["--data.train_file", str(data / "pp_output_train.h5"), "--data.val_file", str(data / "pp_output_val.h5"),
          "--data.test_file", str(data / "pp_output_test_ttbar.h5"), "--data.norm_dict", str(data / "norm_dict.yaml"),
          "--data.class_dict", str(data / "class_dict.yaml"), "--data.batch_size", "100", "--data.num_workers", "0",
          "--data.num_train", "2000", "--data.num_val", "200", "--trainer.max_epochs", str(epochs), "--trainer.precision", "32",
          "--trainer.accelerator", "cpu", "--trainer.devices", "1", "--seed_everything", "42",
          "--model.model.init_args.encoder.init_args.attn_type", "torch-math"]

# Initial weights.
run(init_bin, str(work / "init.ckpt"), *configs, *common)
init = torch.load(work / "init.ckpt", map_location="cpu")["state_dict"]
for name, e in fixture["init"].items():
    t = init.get(name)
    if t is None:
        check(False, f"salt-cpp's model has no {name}")
        continue
    same = t.numel() == e["numel"] and int(t.contiguous().view(torch.int32).to(torch.int64).sum()) == e["checksum"]
    check(same, f"initial {name} is not salt's (first value {float(t.flatten()[0])!r} against {e['first']!r})")
print(f"initial weights: {len(fixture['init'])} tensors checked")

# The fit.
overlay = work / "overlay.yaml"
overlay.write_text("""trainer:
  log_every_n_steps: 1
  callbacks:
    - class_path: salt.callbacks.Checkpoint
      init_args: {monitor_loss: val/jets_classification_loss}
    - class_path: lightning.pytorch.callbacks.LearningRateMonitor
      init_args: {log_momentum: true}
    - class_path: lightning.pytorch.callbacks.ModelCheckpoint
      init_args: {every_n_train_steps: %d, save_top_k: -1, filename: "mid-{step}"}
""" % mid_step + "".join(f"    - {c}\n" for c in settings.get("callbacks", [])))
run(salt_bin, "fit", *configs, "-c", str(overlay), *common, "--force", "-n", "parity", "-oc",
    "--trainer.default_root_dir", str(work / "runs"))
run_dir = next((work / "runs").iterdir())

trained = yaml.safe_load(open(run_dir / "config.yaml"))["data"]["batch_size"]
check(trained == batch, f"trained with batch size {trained}, salt with {batch}")
orders = {}
for path in (run_dir / "checkpoints").glob("mid-step=*.ckpt"):
    extra = torch.load(path, map_location="cpu")
    if extra["salt_cpp"].get("batch_in_epoch", -1) > 0:
        orders[int(extra["epoch"])] = extra["salt_cpp"]["epoch_order"].tolist()
for epoch in range(epochs):
    salts = [s["batch_start"] // batch for s in fixture["steps"] if s.get("epoch", 0) == epoch]
    order = orders.get(epoch, [])[: len(salts)]
    check(order == salts, f"epoch {epoch}: batch order {order} is not salt's {salts}")


def agrees(mine: float, salt: float, salt64: float, bound64: float, what: str) -> float:
    d, d64 = rel(mine, salt), rel(mine, salt64)
    check(d <= 1e-5 or d64 <= bound64, f"{what} {mine!r} against salt's {salt!r} ({d:.2e}) and salt's float64 fit's"
          f" {salt64!r} ({d64:.2e} > {bound64:.2e})")
    return d


if "lr_find" in fixture:
    sweep = fixture["lr_find"]
    rows = list(csv.DictReader(open(run_dir / "lr_find.csv")))
    check(len(rows) == len(sweep["lr"]), f"lr_find: {len(rows)} steps, salt {len(sweep['lr'])}")
    bound = 0.0
    for i, (row, lr, loss, loss64) in enumerate(zip(rows, sweep["lr"], sweep["loss"], sweep["loss64"])):
        bound = max(bound, 3 * rel(loss, loss64))
        check(rel(float(row["lr"]), lr) < 1e-12, f"lr_find step {i}: lr {row['lr']} is not salt's {lr!r}")
        agrees(float(row["loss"]), loss, loss64, bound, f"lr_find step {i}: loss")
    print(f"lr_find: {len(rows)} steps checked")

rows = {}
with open(run_dir / "metrics.csv") as f:
    for row in csv.DictReader(f):
        if row.get("train/loss"):
            rows[int(row["step"])] = row
worst = 0.0
for i, s in enumerate(fixture["steps"]):
    row = rows.get(i)  # Lightning's label, as salt's metrics.csv: the step before this optimizer step
    if row is None:
        check(False, f"no metrics.csv row at step {i}")
        continue
    check(rel(float(row["lr-AdamW"]), s["lr"]) < 1e-7, f"step {i}: lr {row['lr-AdamW']} is not salt's {s['lr']!r}")
    check(rel(float(row["lr-AdamW-momentum"]), s["beta1"]) < 1e-7, f"step {i}: beta1 {row['lr-AdamW-momentum']}"
          f" is not salt's {s['beta1']!r}")
    for key, value in s["losses"].items():
        d = agrees(float(row[key]), value, s["losses64"][key], s["bound64"], f"step {i}: {key}")
        worst = max(worst, d)
print(f"steps: {len(fixture['steps'])}, largest relative loss difference {worst:.2e}")

final = torch.load(sorted((run_dir / "ckpts").glob("epoch=*.ckpt"))[-1], map_location="cpu")["state_dict"]  # the last epoch's
for name, e in fixture["final"].items():
    t = final[name].double()
    for key in ("sum", "norm"):
        mine = float(t.sum() if key == "sum" else t.norm())
        allowed = abs(e[key] - e[key + "64"]) * 3 + 1e-5 * e["norm64"] + 1e-12
        check(abs(mine - e[key + "64"]) <= allowed,
              f"final {name}: {key} {mine!r}, salt's float64 fit {e[key + '64']!r}, salt's {e[key]!r}")
vals = [row for row in csv.DictReader(open(run_dir / "metrics.csv")) if row.get("val/loss")]
check(len(vals) == len(fixture["val"]), f"{len(vals)} validations, salt {len(fixture['val'])}")
for row, v, v64 in zip(vals, fixture["val"], fixture["val64"]):
    salt_val, salt_val64, mine = v["val/loss"], v64["val/loss"], float(row["val/loss"])
    check(abs(mine - salt_val64) <= 2 * abs(salt_val - salt_val64) + 1e-5 * salt_val64,
          f"val/loss {mine!r}: salt {salt_val!r}, salt in float64 {salt_val64!r}")
    print(f"val/loss: salt-cpp {mine:.7f}, salt {salt_val:.7f}, salt in float64 {salt_val64:.7f}")
if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("salt_training_parity: salt-cpp trains as salt did")
