#!/usr/bin/env python3
"""Kernels of an `ncu --csv --page raw` log by total time, with the memory they moved.

Usage: ncu_summary.py LOG [TOP] [--peak-gbs GBS] [--step-ms MS]
  LOG        ncu's raw CSV with gpu__time_duration.sum and, where measured,
             dram__bytes_read.sum and dram__bytes_write.sum (scripts/gpu_check.sh's
             profile step)
  TOP        kernels to print (default 40)
  --peak-gbs the card's DRAM bandwidth in GB/s (H200 4800, H100 SXM 3350): each
             kernel's bytes at that rate against its time, its share of the roofline
  --step-ms  the step's wall time, which the kernels' sum is set against

Prints the total device time, bytes moved and launches; per kernel name (shortened to
100 characters) its share of the time, total ms, launches, mean us, MB moved, GB/s and
% of the roofline; then the same per kind of work (matrix products, attention,
normalisation, elementwise, reductions, gathers and scatters, the optimizer, copies
and casts: torch's dtype casts are copy kernels), the kinds a step's memory passes fall into.
"""
import argparse
import csv
import re
from collections import defaultdict

TIME = "gpu__time_duration.sum"
READ, WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
TIME_UNITS = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}
BYTE_UNITS = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}
# First match wins: a kernel's kind from its name.
KINDS = [
    ("attention", r"flash|fmha|attention|sdpa|softmax"),
    ("matrix products", r"gemm|cutlass|sm\d+_xmma|cublas|matmul|Lt"),
    ("normalisation", r"layer_norm|LayerNorm|rms_norm|batch_norm"),
    ("optimizer", r"multi_tensor|foreach|adam|Adam|lerp"),
    ("gathers and scatters", r"index|gather|scatter|segment|embedding|nonzero|masked"),
    ("reductions", r"reduce|Reduce|sum_kernel|norm_kernel|max_kernel|argmax"),
    ("copies and casts", r"copy|memcpy|memset|fill|cat_|CatArray|convert"),
    ("elementwise", r"elementwise|vectorized|unrolled|pointwise|activation|gelu|silu|relu|dropout|fused"),
]


def kind_of(name: str) -> str:
    for kind, pattern in KINDS:
        if re.search(pattern, name):
            return kind
    return "other"


def rows(path):
    with open(path, newline="") as f:
        # ncu prints its own "==PROF==" lines before the CSV header
        lines = [line for line in f if line.startswith('"')]
    return list(csv.reader(lines))


def number(text: str) -> float:
    return float(text.replace(",", ""))


class Totals:
    def __init__(self):
        self.ms, self.bytes, self.launches = 0.0, 0.0, 0

    def add(self, ms, moved):
        self.ms += ms
        self.bytes += moved
        self.launches += 1


def line(label: str, t: Totals, all_ms: float, peak_gbs, has_bytes: bool) -> str:
    text = f"{100 * t.ms / all_ms:5.1f}% {t.ms:8.3f} {t.launches:8d} {1000 * t.ms / t.launches:8.1f}"
    if has_bytes:
        gbs = t.bytes / (t.ms * 1e6) if t.ms > 0 else 0.0
        roof = f"{100 * gbs / peak_gbs:5.1f}%" if peak_gbs else "    -"
        text += f" {t.bytes / 1e6:9.2f} {gbs:7.0f} {roof}"
    return f"{text}  {label}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("top", nargs="?", type=int, default=40)
    ap.add_argument("--peak-gbs", type=float)
    ap.add_argument("--step-ms", type=float)
    a = ap.parse_args()
    table = rows(a.log)
    if len(table) < 2:
        raise SystemExit(f"ncu_summary: no CSV rows in {a.log}")
    header, units = table[0], table[1]
    if TIME not in header:
        raise SystemExit(f"ncu_summary: no {TIME} column in {a.log}")
    col = {k: header.index(k) for k in ("Kernel Name", TIME, READ, WRITE) if k in header}
    has_bytes = READ in col and WRITE in col
    t_scale = TIME_UNITS.get(units[col[TIME]], 1e-6)
    b_scale = {k: BYTE_UNITS.get(units[col[k]], 1.0) for k in (READ, WRITE) if k in col}
    kernels, kinds, everything = defaultdict(Totals), defaultdict(Totals), Totals()
    for row in table[2:]:
        try:
            ms = number(row[col[TIME]]) * t_scale
            moved = sum(number(row[col[k]]) * b_scale[k] for k in (READ, WRITE)) if has_bytes else 0.0
        except (ValueError, IndexError):
            continue
        name = row[col["Kernel Name"]]
        for t in (kernels[name], kinds[kind_of(name)], everything):
            t.add(ms, moved)
    if not everything.launches:
        raise SystemExit(f"ncu_summary: no kernel rows in {a.log}")
    all_ms = everything.ms
    head = f"device time {all_ms:.3f} ms in {everything.launches} kernel launches ({len(kernels)} kernels)"
    if has_bytes:
        head += f", {everything.bytes / 1e9:.3f} GB moved"
        if a.peak_gbs:
            head += f" (at {a.peak_gbs:.0f} GB/s: {everything.bytes / (a.peak_gbs * 1e6):.3f} ms, the memory roofline)"
    print(head)
    if a.step_ms:
        print(f"the step: {a.step_ms:.3f} ms wall, the kernels' sum {100 * all_ms / a.step_ms:.1f}% of it")
    cols = f"{'share':>6} {'ms':>8} {'launches':>8} {'mean us':>8}"
    if has_bytes:
        cols += f" {'MB':>9} {'GB/s':>7} {'roof':>6}"
    print(cols + "  kernel")
    for name, t in sorted(kernels.items(), key=lambda kv: -kv[1].ms)[: a.top]:
        print(line(name if len(name) <= 100 else name[:97] + "...", t, all_ms, a.peak_gbs, has_bytes))
    print("\nby kind")
    print(cols + "  kind")
    for kind, t in sorted(kinds.items(), key=lambda kv: -kv[1].ms):
        print(line(kind, t, all_ms, a.peak_gbs, has_bytes))


if __name__ == "__main__":
    main()
