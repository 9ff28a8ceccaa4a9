"""Turns salt's parity probes (bench/python/parity_probe.py: its float32 fit and the
same fit in float64) into the fixture tests/training/salt_training_parity.py reads:
what salt did, small enough to commit.

    parity_fixture.py PROBE PROBE64 DATA_DIR OUT.json [SETTINGS_JSON]

The fixture holds: the sha256 of the training and validation files, per tensor of the
initial weights its size and checksum (the sum of its float32 bit patterns as
integers) and first value, per step the batch's first jet, the lr and beta1, salt's
losses in float32 and float64 and the bound of a step (a step agrees when its losses
are within 1e-5 relative of salt's, or no farther from the float64 fit's than
three times the farthest salt's own float32 fit has been from it so far), and at the end per parameter
its sum and L2 norm in salt's float32 and float64 fits, and the validation losses.
With a tuner among salt's callbacks, also the batch size salt trained with and a
LearningRateFinder's sweep (its learning rates, smoothed losses in float32 and float64).
SETTINGS_JSON: how the fit was run beyond the defaults (overlays, callbacks, epochs,
the mid-epoch checkpoint's step), for the test to run salt-cpp the same way.
"""

import hashlib
import json
import sys
from pathlib import Path

import torch


def checksum(t: torch.Tensor) -> int:
    return int(t.detach().contiguous().view(torch.int32).to(torch.int64).sum())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def main() -> int:
    probe, probe64, data, out = map(Path, sys.argv[1:5])
    rows = [json.loads(line) for line in open(probe / "steps.jsonl")]
    rows64 = [json.loads(line) for line in open(probe64 / "steps.jsonl")]
    init = torch.load(probe / "init.pt", weights_only=True)
    steps, salt_err = [], 0.0
    for r, e in zip(rows, rows64):
        salt_err = max(salt_err, max(rel(r["losses"][k], e["losses"][k]) for k in r["losses"]))
        steps.append({"epoch": r["epoch"], "batch_start": r["batch_start"], "lr": r["lr"], "beta1": r["beta1"], "losses": r["losses"],
                      "losses64": e["losses"], "bound64": 3 * salt_err})
    final = torch.load(probe / "final.pt", weights_only=True)["state_dict"]
    final64 = torch.load(probe64 / "final.pt", weights_only=True)["state_dict"]
    fixture = {
        "data_sha256": {f: sha256(data / f) for f in ("pp_output_train.h5", "pp_output_val.h5")},
        "init": {k: {"numel": v.numel(), "checksum": checksum(v), "first": float(v.flatten()[0]) if v.numel() else 0}
                 for k, v in init.items() if v.is_floating_point()},
        "steps": steps,
        "final": {k: {"sum": float(v.double().sum()), "norm": float(v.double().norm()),
                      "sum64": float(final64[k].double().sum()), "norm64": float(final64[k].double().norm())}
                  for k, v in final.items() if v.is_floating_point()},
        "val": [json.loads(line) for line in open(probe / "val.jsonl")],
        "val64": [json.loads(line) for line in open(probe64 / "val.jsonl")],
    }
    if len(sys.argv) > 5:
        fixture["settings"] = json.loads(sys.argv[5])
    start = probe / "train_start.json"
    if start.exists():
        fixture["batch_size"] = json.loads(start.read_text())["batch_size"]
    if (probe / "lr_find.json").exists():
        sweep, sweep64 = (json.loads((p / "lr_find.json").read_text()) for p in (probe, probe64))
        fixture["lr_find"] = {"lr": sweep["lr"], "loss": sweep["loss"], "loss64": sweep64["loss"]}
    out.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"parity_fixture: {len(steps)} steps, {len(fixture['init'])} tensors -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
