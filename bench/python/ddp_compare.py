"""Compares a data-parallel salt fit (its rank 0 probe, bench/python/parity_probe.py)
with salt-cpp's (its run folder) for bench/ddp_vs_salt.sh: per step the logged
training loss (the mean over ranks in both), the validation losses, and the final
weights (the last checkpoint against the probe's final.pt). Exits 1 when a loss is
farther than 1e-6 (relative) or the step counts differ.

    python3 ddp_compare.py PROBE_DIR RUN_DIR
"""
import csv
import json
import sys
from pathlib import Path

import torch

BOUND = 1e-6


def relative(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), 1e-12)


def last_checkpoint(run: Path) -> Path:
    mids = list(run.glob("*/checkpoints/mid-step=*.ckpt"))
    return max(mids, key=lambda p: int(p.stem.split("=")[-1]))


def main() -> int:
    probe, run = Path(sys.argv[1]), Path(sys.argv[2])
    steps = [json.loads(line) for line in open(probe / "steps.jsonl")]
    vals = [json.loads(line) for line in open(probe / "val.jsonl")]
    rows = list(csv.DictReader(open(next(run.glob("*/metrics.csv")))))
    train = [r for r in rows if r["train/loss"]]
    val = [r for r in rows if r["val/loss"]]
    ok = len(steps) == len(train) and len(vals) == len(val)
    print(f"steps: salt {len(steps)}, salt-cpp {len(train)}; validations: salt {len(vals)}, salt-cpp {len(val)}")
    worst = 0.0
    for s, r in zip(steps, train):
        d = relative(s["logged_loss"], float(r["train/loss"]))
        worst = max(worst, d)
        print(f"  epoch {s['epoch']} step {s['step']}: salt {s['logged_loss']:.7f}  "
              f"salt-cpp {float(r['train/loss']):.7f}  rel {d:.1e}")
    for v, r in zip(vals, val):
        d = relative(v["val/loss"], float(r["val/loss"]))
        worst = max(worst, d)
        print(f"  val after epoch {v['epoch']}: salt {v['val/loss']:.7f}  salt-cpp {float(r['val/loss']):.7f}  rel {d:.1e}")
    final = torch.load(probe / "final.pt", map_location="cpu")["state_dict"]
    ckpt = last_checkpoint(run)
    ours = torch.load(ckpt, map_location="cpu", weights_only=False)["state_dict"]
    diffs = sorted(((final[k] - ours[k]).abs().max() / final[k].abs().max().clamp_min(1e-12)).item()
                   for k in final if final[k].is_floating_point())
    print(f"final weights ({ckpt.name}): {len(diffs)} tensors, median relative difference "
          f"{diffs[len(diffs) // 2]:.1e}, largest {diffs[-1]:.1e}")
    ok = ok and worst <= BOUND
    print(f"worst loss difference {worst:.1e}: {'within' if ok else 'OUT OF'} bound {BOUND:g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
