#!/usr/bin/env python3
"""Compares two prediction files (salt's and salt-cpp's `salt test` output).

Usage: compare_predictions.py A.h5 B.h5 [--atol 1e-5]

Same datasets, shapes, field names and dtypes, and the same root attributes'
names; integer and boolean fields equal, float fields within --atol (NaN where the
other has NaN). Prints one line per dataset with the largest float difference;
exits 1 with the first mismatch named.
"""
import argparse
import sys

import h5py
import numpy as np


def fail(message):
    print(f"compare_predictions: {message}")
    sys.exit(1)


def compare(a, b, atol):
    if sorted(a.attrs) != sorted(b.attrs):
        fail(f"root attributes differ: {sorted(a.attrs)} vs {sorted(b.attrs)}")
    if sorted(a) != sorted(b):
        fail(f"datasets differ: {sorted(a)} vs {sorted(b)}")
    for name in sorted(a):
        x, y = a[name], b[name]
        if not isinstance(x, h5py.Dataset):
            compare(x, y, atol)
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            fail(f"{name}: {x.shape} {x.dtype} vs {y.shape} {y.dtype}")
        if x.maxshape != y.maxshape:
            fail(f"{name}: maxshape {x.maxshape} vs {y.maxshape}")
        x, y = x[...], y[...]
        fields = x.dtype.names or [None]
        worst = 0.0
        for f in fields:
            u, v = (x, y) if f is None else (x[f], y[f])
            if u.dtype.kind == "f":
                u, v = u.astype(np.float64), v.astype(np.float64)
                # NaN and +-inf must sit in the same places with the same values;
                # the tolerance applies to the finite values only.
                if not np.array_equal(np.isfinite(u), np.isfinite(v)):
                    fail(f"{name}.{f}: non-finite values in different places")
                if not np.array_equal(u[~np.isfinite(u)], v[~np.isfinite(v)], equal_nan=True):
                    fail(f"{name}.{f}: non-finite values differ")
                finite = np.isfinite(u)
                diff = float(np.max(np.abs(u[finite] - v[finite]), initial=0.0))
                worst = max(worst, diff)
                if diff > atol:
                    fail(f"{name}.{f}: max |diff| {diff:.3g} > {atol:g}")
            elif not np.array_equal(u, v):
                fail(f"{name}.{f}: {int(np.sum(u != v))} values differ")
        print(f"compare_predictions: {name} {x.shape} {len(fields)} fields equal, max |diff| {worst:.3g}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--atol", type=float, default=1e-5)
    args = parser.parse_args()
    with h5py.File(args.a, "r") as a, h5py.File(args.b, "r") as b:
        compare(a, b, args.atol)


if __name__ == "__main__":
    main()
