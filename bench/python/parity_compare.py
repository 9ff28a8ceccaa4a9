"""Compares a salt fit (its parity probe's files, bench/python/parity_probe.py) with
a salt-cpp fit of the same config (its run directory), for bench/train_parity.sh.

    parity_compare.py --probe DIR --cpp-run RUN --cpp-init CKPT --batch B [--rtol R]

Prints, in order: the initial weights (tensors equal bit for bit, else the worst),
the batch order of the first epoch, a table of the steps (lr, beta1, loss, each
task's loss, the gradients' total magnitude: salt's value and the relative
difference), the first step where a loss parts by more than --rtol, the final
parameters and AdamW moments (the worst relative difference, and where), and the
validation losses. Exits 1 when the weights start apart, the batches or the learning
rate differ, or a loss parts by more than --rtol.
"""

import argparse
import csv
import json
import math
from pathlib import Path

import torch
import yaml


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def tensor_rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    scale = torch.maximum(a.abs().max(), b.abs().max()).clamp_min(1e-30)
    return float((a - b).abs().max() / scale)


def load(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def cpp_steps(run: Path) -> dict:
    """metrics.csv's rows with train/loss, by step label (Lightning's: the i-th step at i - 1)."""
    rows = {}
    with open(run / "metrics.csv") as f:
        for row in csv.DictReader(f):
            if row.get("train/loss"):
                rows[int(row["step"])] = {k: float(v) for k, v in row.items() if v not in ("", None) and k != "step"}
    return rows


def compare_init(salt_init: dict, cpp_init: dict) -> bool:
    keys = [k for k in salt_init if k in cpp_init]
    missing = sorted(set(salt_init) ^ set(cpp_init))
    equal = [k for k in keys if torch.equal(salt_init[k], cpp_init[k])]
    print(f"initial weights: {len(equal)} of {len(keys)} tensors equal bit for bit"
          + (f"; in one only: {missing[:5]}" if missing else ""))
    worst = sorted(((tensor_rel(salt_init[k], cpp_init[k]), k) for k in keys if k not in equal), reverse=True)
    for r, k in worst[:5]:
        print(f"  differs: {k} (max relative difference {r:.3g})")
    return not worst and not missing


def trained_batch(probe: Path, run: Path, configured: int) -> int:
    """The batch size each fit trained with: the configured one, or a BatchSizeFinder's."""
    start = probe / "train_start.json"
    salt = json.loads(start.read_text()).get("batch_size") if start.exists() else None
    cpp = yaml.safe_load(open(run / "config.yaml"))["data"]["batch_size"]
    if salt is not None and (salt != configured or cpp != configured):
        print(f"batch size trained: salt {salt}, salt-cpp {cpp} (configured {configured})")
    return salt if salt is not None else configured


def compare_lr_find(probe: Path, run: Path) -> bool:
    """A LearningRateFinder's sweep: its learning rates and smoothed losses, step by step."""
    if not (probe / "lr_find.json").exists():
        return True
    salt = json.loads((probe / "lr_find.json").read_text())
    rows = list(csv.DictReader(open(run / "lr_find.csv")))
    cpp_lr, cpp_loss = [float(r["lr"]) for r in rows], [float(r["loss"]) for r in rows]
    same_len = len(cpp_lr) == len(salt["lr"])
    lr_rel = max((rel(a, b) for a, b in zip(salt["lr"], cpp_lr)), default=0.0)
    loss_rel = [rel(a, b) for a, b in zip(salt["loss"], cpp_loss)]
    first = next((i for i, r in enumerate(loss_rel) if r > 1e-5), None)
    print(f"lr_find: {len(salt['lr'])} steps (salt), {len(cpp_lr)} (salt-cpp); lr at most {lr_rel:.1e} apart, "
          f"smoothed loss at most {max(loss_rel, default=0.0):.1e}"
          + (f", first beyond 1e-5 at step {first}" if first is not None else ""))
    return same_len and lr_rel < 1e-12


def compare_order(salt_rows: list, run: Path, batch: int) -> bool:
    """Each epoch's batch order: salt's first jet of every batch against the order a
    salt-cpp checkpoint written in the middle of that epoch records."""
    cpp_orders = {}
    for path in (run / "checkpoints").glob("mid-step=*.ckpt"):
        ck = load(path)
        extra = ck.get("salt_cpp", {})
        if extra.get("batch_in_epoch", -1) > 0 and extra.get("epoch_order") is not None:
            cpp_orders[int(ck["epoch"])] = extra["epoch_order"].tolist()
    ok = True
    for epoch in sorted({r["epoch"] for r in salt_rows}):
        salt_order = [r["batch_start"] // batch for r in salt_rows if r["epoch"] == epoch and r["batch_start"] is not None]
        if epoch not in cpp_orders:
            print(f"batch order, epoch {epoch}: salt-cpp wrote no mid-epoch checkpoint with its order")
            ok = False
            continue
        cpp_order = cpp_orders[epoch][: len(salt_order)]
        first = next((i for i, (x, y) in enumerate(zip(salt_order, cpp_order)) if x != y), None)
        print(f"batch order, epoch {epoch}: {'the same' if cpp_order == salt_order else f'parts at step {first}'} "
              f"({len(salt_order)} batches; salt's first: {salt_order[:8]}, salt-cpp's: {cpp_order[:8]})")
        ok = ok and cpp_order == salt_order
    return ok


def compare_steps(salt_rows: list, cpp_rows: dict, rtol: float, exact_rows: list | None) -> bool:
    """Per step: salt-cpp against salt; with salt's float64 fit (exact_rows), also each
    against it, the yardstick of float32 round-off. A step passes when salt-cpp is
    within rtol of salt, or no farther from the float64 fit than three times the farthest
    salt itself has been so far."""
    keys = sorted({k for r in salt_rows for k in r["losses"]})
    worst = lambda a, b: max(rel(a[k], b.get(k, math.nan)) for k in keys)  # noqa: E731
    print("\nper step, the largest relative difference of the loss and the task losses"
          + ("; against salt's float64 fit: salt-cpp's and salt's own" if exact_rows else ""))
    print("step  lr (salt)     lr rel    loss (salt)  salt-cpp/salt" + ("  salt-cpp/fp64  salt/fp64" if exact_rows else "")
          + "  |grad| rel")
    ok, parted, largest, salt_err = True, None, 0.0, 0.0
    for i, r in enumerate(salt_rows):
        c = cpp_rows.get(i)
        if c is None:
            print(f"{i:4d}  salt-cpp logged no row at step {i}")
            return False
        cl = {k: c.get(k, math.nan) for k in keys}
        d = worst(r["losses"], cl)
        lr_rel = rel(r["lr"], c.get("lr-AdamW", math.nan))
        grad_rel = rel(r.get("grad_sum_norm", math.nan), c.get("gradient_total_magnitude", math.nan))
        line = f"{i:4d}  {r['lr']:.6e}  {lr_rel:8.1e}  {r['losses']['train/loss']:.7f}  {d:13.1e}"
        within = d <= rtol
        if exact_rows and i < len(exact_rows):
            e = exact_rows[i]["losses"]
            d_cpp, d_salt = worst(e, cl), worst(e, r["losses"])
            salt_err = max(salt_err, d_salt)
            within = within or d_cpp <= 3 * salt_err
            line += f"  {d_cpp:13.1e}  {d_salt:9.1e}"
        largest = max(largest, d)
        if lr_rel > 1e-7:  # metrics.csv prints 8 significant digits
            ok = False
        if parted is None and not within:
            parted = i
        if i < 5 or i % 10 == 9 or i == len(salt_rows) - 1 or i == parted:
            print(line + f"  {grad_rel:8.1e}")
    if "grad_std" in salt_rows[0] and 0 in cpp_rows:  # metrics.csv labels steps as Lightning does
        g_salt, c = salt_rows[0]["grad_std"], cpp_rows[0]
        g_cpp = {n: c.get(f"gradients_grad/{n}_std", math.nan) for n in g_salt}
        far = max(g_salt, key=lambda n: rel(g_salt[n], g_cpp[n]))
        line = f"step 0 gradients (std per parameter): salt-cpp/salt at most {rel(g_salt[far], g_cpp[far]):.1e} ({far})"
        if exact_rows and "grad_std" in exact_rows[0]:
            g64 = exact_rows[0]["grad_std"]
            line += (f"; against float64: salt-cpp {max(rel(g_cpp[n], g64[n]) for n in g64):.1e},"
                     f" salt {max(rel(g_salt[n], g64[n]) for n in g64):.1e}")
        print(line)
    bound = f"within {rtol:g} of salt or of salt's own float32 round-off" if exact_rows else f"within {rtol:g}"
    print(f"steps: {len(salt_rows)}, salt-cpp/salt at most {largest:.2e}; "
          + (f"first outside ({bound}) at step {parted}" if parted is not None else f"every step {bound}")
          + ("" if ok else "; the learning rates differ"))
    return ok and parted is None


def compare_final(final: dict, run: Path, exact: dict | None) -> None:
    ckpts = sorted(p for p in (run / "ckpts").glob("*.ckpt") if not p.name.startswith("mid-"))
    ck = load(ckpts[-1])
    sd = ck["state_dict"]
    worst = sorted(((tensor_rel(v, sd[k]), k) for k, v in final["state_dict"].items() if k in sd), reverse=True)
    print(f"\nfinal parameters ({ckpts[-1].name}): worst relative difference {worst[0][0]:.2e} ({worst[0][1]})")
    if exact:
        e = exact["state_dict"]
        far = lambda a: max(tensor_rel(v, e[k]) for k, v in a.items() if k in e and v.is_floating_point())  # noqa: E731
        print(f"  against salt's float64 fit: salt-cpp {far(sd):.2e}, salt {far(final['state_dict']):.2e};"
              f" {worst[0][1]}: salt-cpp {tensor_rel(sd[worst[0][1]], e[worst[0][1]]):.2e},"
              f" salt {tensor_rel(final['state_dict'][worst[0][1]], e[worst[0][1]]):.2e}")
    state = ck["optimizer_states"][0]["state"]
    moments = []
    for i, (name, s) in enumerate(zip(final["param_names"], final["optimizer"])):
        if i in state and "exp_avg" in s:
            moments.append((tensor_rel(s["exp_avg"], state[i]["exp_avg"]), f"exp_avg of {name}"))
            moments.append((tensor_rel(s["exp_avg_sq"], state[i]["exp_avg_sq"]), f"exp_avg_sq of {name}"))
    moments.sort(reverse=True)
    print(f"AdamW moments: worst relative difference {moments[0][0]:.2e} ({moments[0][1]}), {len(moments)} tensors")


def compare_val(probe: Path, run: Path) -> None:
    salt_vals = [json.loads(line) for line in open(probe / "val.jsonl")]
    with open(run / "metrics.csv") as f:
        cpp_vals = [row for row in csv.DictReader(f) if row.get("val/loss")]
    for s, c in zip(salt_vals, cpp_vals):
        print(f"validation, epoch {s['epoch']}: val/loss salt {s['val/loss']:.7f}, salt-cpp {float(c['val/loss']):.7f}"
              f" (relative {rel(s['val/loss'], float(c['val/loss'])):.1e})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", type=Path, required=True)
    ap.add_argument("--cpp-run", type=Path, required=True)
    ap.add_argument("--cpp-init", type=Path, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--exact-probe", type=Path, help="salt's probe of the same fit in float64 (precision 64)")
    a = ap.parse_args()
    salt_rows = [json.loads(line) for line in open(a.probe / "steps.jsonl")]
    init_ok = compare_init(load(a.probe / "init.pt"), load(a.cpp_init)["state_dict"])
    order_ok = compare_order(salt_rows, a.cpp_run, trained_batch(a.probe, a.cpp_run, a.batch))
    lr_find_ok = compare_lr_find(a.probe, a.cpp_run)
    base_rows = [json.loads(line) for line in open(a.exact_probe / "steps.jsonl")] if a.exact_probe else None
    steps_ok = compare_steps(salt_rows, cpp_steps(a.cpp_run), a.rtol, base_rows)
    compare_final(load(a.probe / "final.pt"), a.cpp_run, load(a.exact_probe / "final.pt") if a.exact_probe else None)
    compare_val(a.probe, a.cpp_run)
    ok = init_ok and order_ok and steps_ok and lr_find_ok
    print("\nparity: " + ("salt-cpp trains as salt" if ok else "they part (above)"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
