"""The seeds table of bench/seeds_vs_salt.sh: per trainer, the final validation loss
and the light- and c-jet rejections at 70/77/85 % b-jet efficiency on the test file,
mean and spread (min..max) over the seeds, side by side.

    seed_table.py OUT_DIR    (OUT_DIR/<trainer>_<seed>/: run directories with
                              ckpts/*.ckpt and the test prediction file)

D_b = log(p_b / (f_c p_c + (1 - f_c) p_u)), f_c = 0.2; the cut keeps the wanted
fraction of the b jets (numpy's linear percentile, as puma); rejection = N / N passing.
"""
import glob
import re
import sys
from pathlib import Path

import h5py
import numpy as np

try:
    import hdf5plugin  # noqa: F401  (salt writes its predictions LZ4-compressed)
except ImportError:
    pass

F_C = 0.2
EFFS = (0.70, 0.77, 0.85)


def rejections(pred: Path) -> dict:
    jets = h5py.File(pred, "r")["jets"][:]
    name = next(n[: -len("_pb")] for n in jets.dtype.names if n.endswith("_pb"))
    pb, pc, pu = (jets[f"{name}_p{x}"].astype(np.float64) for x in "bcu")
    d = np.log((pb + 1e-10) / (F_C * pc + (1 - F_C) * pu + 1e-10))
    label = jets["HadronConeExclTruthLabelID"]
    out = {}
    for eff in EFFS:
        cut = np.percentile(d[label == 5], 100 * (1 - eff))
        for bkg, lab in (("light", 0), ("c", 4)):
            passing = np.sum(d[label == lab] > cut)
            out[f"{bkg} rej @ {int(eff * 100)}%"] = np.sum(label == lab) / max(passing, 1)
    return out


def run_figures(run: Path) -> dict:
    ckpts = sorted(glob.glob(str(run / "**" / "ckpts" / "epoch=*.ckpt"), recursive=True))
    last = ckpts[-1]
    val = float(re.search(r"val_loss=([0-9.]+)\.ckpt", last).group(1))
    preds = sorted(glob.glob(str(Path(last).parent / "*__test_*.h5")))
    return {"val/jets_classification_loss": val, **rejections(Path(preds[-1]))}


def main() -> int:
    out = Path(sys.argv[1])
    table = {}
    for run in sorted(p for p in out.glob("*_seed*") if p.is_dir()):
        trainer = run.name.split("_seed")[0]
        table.setdefault(trainer, []).append(run_figures(run))
    keys = list(next(iter(table.values()))[0])
    trainers = sorted(table)
    print("| figure | " + " | ".join(f"{t} (mean, min..max over {len(table[t])} seeds)" for t in trainers) + " |")
    print("|---|" + "---|" * len(trainers))
    for k in keys:
        cells = []
        for t in trainers:
            v = np.array([r[k] for r in table[t]])
            cells.append(f"{v.mean():.4g} ({v.min():.4g}..{v.max():.4g})")
        print(f"| {k} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
