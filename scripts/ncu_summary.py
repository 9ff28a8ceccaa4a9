#!/usr/bin/env python3
"""Kernels of an `ncu --csv --page raw --metrics gpu__time_duration.sum` log by total time.

Usage: ncu_summary.py LOG [TOP]   (TOP: rows to print, default 40)
Prints the total device time, the number of launches, and per kernel name (shortened
to 110 characters): its share of the time, total ms, launches and mean us.
"""
import csv
import sys
from collections import defaultdict


def rows(path):
    with open(path, newline="") as f:
        # ncu prints its own "==PROF==" lines before the CSV header
        lines = [line for line in f if line.startswith('"')]
    return list(csv.reader(lines))


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    table = rows(path)
    if not table:
        sys.exit(f"ncu_summary: no CSV rows in {path}")
    header = table[0]
    name_col = header.index("Kernel Name")
    time_col = header.index("gpu__time_duration.sum")
    unit = table[1][time_col] if len(table) > 1 else "ns"
    scale = {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "nsecond": 1e-6, "ms": 1.0, "msecond": 1.0}.get(unit, 1e-6)
    total = defaultdict(float)
    count = defaultdict(int)
    for row in table[1:]:
        try:
            ms = float(row[time_col].replace(",", "")) * scale
        except (ValueError, IndexError):
            continue  # the units row
        total[row[name_col]] += ms
        count[row[name_col]] += 1
    all_ms = sum(total.values())
    launches = sum(count.values())
    print(f"device time {all_ms:.3f} ms in {launches} kernel launches ({len(total)} kernels)")
    print(f"{'share':>6} {'ms':>8} {'launches':>8} {'mean us':>8}  kernel")
    for name, ms in sorted(total.items(), key=lambda kv: -kv[1])[:top]:
        short = name if len(name) <= 110 else name[:107] + "..."
        print(f"{100 * ms / all_ms:5.1f}% {ms:8.3f} {count[name]:8d} {1000 * ms / count[name]:8.1f}  {short}")


if __name__ == "__main__":
    main()
