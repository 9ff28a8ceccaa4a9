#!/usr/bin/env python3
"""Compares two prediction files (salt's and salt-cpp's `salt test` output).

Usage: compare_predictions.py A.h5 B.h5 [--atol 1e-5]

Same datasets, shapes, field names and dtypes, and the same root attributes'
names; integer and boolean fields equal, float fields within --atol (NaN where the
other has NaN). Prints one line per dataset with the largest float difference.

Exit codes, as diff's and cmp's: 0 the files agree; 1 they differ (the first
mismatch named on stdout); 2 they cannot be compared: one line on stderr,
`compare_predictions.py: error: <what>`, naming the file, dataset or flag. An
"agreement" over nothing is refused, as `salt compare_models` refuses it: a file
against itself, a file without datasets, a dataset without rows, a float field
without one finite value in either file.

`salt compare_models` is not called: it compares one tagger's probabilities in
`jets` and refuses any NaN, while this compares every dataset, field and attribute
and accepts NaN where both files have it (padded track slots, a leading object's
value when no object passes).
"""
import argparse
import math
import os
import sys

try:  # a python without them gets one line too, not a traceback
    import h5py
    import numpy as np
except ImportError as e:
    print(f"compare_predictions.py: error: {sys.executable} cannot import {e.name} (it needs h5py and numpy)", file=sys.stderr)
    sys.exit(2)

PROG = "compare_predictions.py"
SHOWN = 200  # at most this much of a name from the user or a file is echoed
# What h5py raises on a damaged file: HDF5's errors come as any of these
H5PY_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)


class CannotCompare(Exception):
    """A bad input: the files cannot be compared (exit 2)."""


def shown(text):
    """A name as it is echoed: control characters escaped, at most SHOWN characters."""
    text = str(text).encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def differ(message):
    print(f"compare_predictions: {message}")
    sys.exit(1)


def tolerance(text):
    """--atol's value: a finite number >= 0 (a NaN tolerance would pass any difference)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not '{shown(text)}'") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, not '{shown(text)}'")
    return value


class OneLineParser(argparse.ArgumentParser):
    """argparse, with its errors as the one line `compare_predictions.py: error: ...` (no usage block)."""

    def error(self, message):
        print(f"{PROG}: error: {shown(message)} (see --help)", file=sys.stderr)
        sys.exit(2)


def check_readable(path):
    if not os.path.exists(path):
        raise CannotCompare(f"{shown(path)}: no such file")
    if not os.path.isfile(path):
        raise CannotCompare(f"{shown(path)}: not a file")
    if not h5py.is_hdf5(path):
        raise CannotCompare(f"{shown(path)}: not an HDF5 file")


def open_hdf5(path):
    try:
        return h5py.File(path, "r")
    except OSError as e:  # unreadable, or damaged past its signature
        raise CannotCompare(f"{shown(path)}: cannot open: {shown(e)}") from None


def read(file, name):
    """A dataset's values; a dataset h5py cannot read (a filter missing, damage) is named."""
    try:
        return file[name][...]
    except H5PY_ERRORS as e:
        raise CannotCompare(f"{shown(file.filename)}: cannot read dataset '{shown(name)}': {shown(e)}") from None


def listing(group):
    """A group's attribute names, and its members by name; a damaged group is named."""
    try:
        return sorted(group.attrs), {key: group.get(key) for key in sorted(group)}
    except H5PY_ERRORS as e:
        where = "root" if group.name == "/" else f"group '{shown(group.name.lstrip('/'))}'"
        raise CannotCompare(f"{shown(group.file.filename)}: cannot read its {where}: {shown(e)}") from None


# Float fields compared, and those with a finite value in either file: NaN == NaN
# everywhere is no agreement, but one all-NaN field beside finite ones can be real.
FLOATS_SEEN = {"fields": 0, "finite": 0}


def compare_floats(name, u, v, atol, files):
    """The largest finite difference of one float field; exits 1 where it or the non-finite values differ."""
    u, v = u.astype(np.float64), v.astype(np.float64)
    finite = np.isfinite(u)
    FLOATS_SEEN["fields"] += 1
    FLOATS_SEEN["finite"] += int(bool(finite.any() or np.isfinite(v).any()))
    # NaN and +-inf must sit in the same places with the same values; the tolerance
    # applies to the finite values only.
    if not np.array_equal(finite, np.isfinite(v)):
        differ(f"{name}: non-finite values in different places")
    if not np.array_equal(u[~finite], v[~finite], equal_nan=True):
        differ(f"{name}: non-finite values differ")
    diff = float(np.max(np.abs(u[finite] - v[finite]), initial=0.0))
    if diff > atol:
        differ(f"{name}: max |diff| {diff:.3g} > {atol:g}")
    return diff


def compare_dataset(x, y, atol, files):
    name = shown(x.name.lstrip("/"))
    if x.shape != y.shape or x.dtype != y.dtype:
        differ(f"{name}: {x.shape} {x.dtype} vs {y.shape} {y.dtype}")
    if x.maxshape != y.maxshape:
        differ(f"{name}: maxshape {x.maxshape} vs {y.maxshape}")
    if x.shape is None or 0 in x.shape:  # nothing in both: equal, and meaningless
        raise CannotCompare(f"{name}: no rows in {shown(files[0])} nor {shown(files[1])} (shape {x.shape}): nothing to compare")
    u_all, v_all = read(x.file, x.name), read(y.file, y.name)
    fields = x.dtype.names or [None]
    worst = 0.0
    finite_before = FLOATS_SEEN["finite"]
    floats = 0
    for f in fields:
        u, v = (u_all, v_all) if f is None else (u_all[f], v_all[f])
        if u.dtype.kind == "f":
            floats += 1
            worst = max(worst, compare_floats(f"{name}.{shown(f)}", u, v, atol, files))
        elif not np.array_equal(u, v):
            differ(f"{name}.{shown(f)}: {int(np.sum(u != v))} values differ")
    # A float field that is NaN (or inf) everywhere in both files agrees by nothing: say so.
    empty = floats - (FLOATS_SEEN["finite"] - finite_before)
    note = f" ({empty} of them without a finite value in either file)" if empty else ""
    print(f"compare_predictions: {name} {x.shape} {len(fields)} fields equal{note}, max |diff| {worst:.3g}")


NEITHER = "neither a group nor a dataset"  # a broken link


def kind(item):
    return "a group" if isinstance(item, h5py.Group) else "a dataset" if isinstance(item, h5py.Dataset) else NEITHER


def compare(a, b, atol, files):
    """Compares two groups; returns the number of datasets compared."""
    (attrs_a, members_a), (attrs_b, members_b) = listing(a), listing(b)
    if attrs_a != attrs_b:
        where = "root" if a.name == "/" else shown(a.name.lstrip("/"))
        differ(f"{where} attributes differ: {shown(attrs_a)} vs {shown(attrs_b)}")
    if sorted(members_a) != sorted(members_b):
        differ(f"datasets differ: {shown(sorted(members_a))} vs {shown(sorted(members_b))}")
    count = 0
    for key, x in members_a.items():
        y = members_b[key]
        name = shown((a.name.rstrip("/") + "/" + key).lstrip("/"))
        kinds = kind(x), kind(y)
        if kinds[0] != kinds[1] or kinds[0] == NEITHER:
            raise CannotCompare(f"{name} is {kinds[0]} in {shown(files[0])} and {kinds[1]} in {shown(files[1])}")
        if isinstance(x, h5py.Group):
            count += compare(x, y, atol, files)
        else:
            compare_dataset(x, y, atol, files)
            count += 1
    return count


def main():
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--atol", type=tolerance, default=1e-5)
    args = parser.parse_args()
    try:
        for path in (args.a, args.b):
            check_readable(path)
        if os.path.samefile(args.a, args.b):  # a file always agrees with itself
            raise CannotCompare(f"{shown(args.a)} and {shown(args.b)} are the same file")
        with open_hdf5(args.a) as a, open_hdf5(args.b) as b:
            if compare(a, b, args.atol, (args.a, args.b)) == 0:
                raise CannotCompare(f"no datasets in {shown(args.a)} nor {shown(args.b)}: nothing to compare")
            if FLOATS_SEEN["fields"] and not FLOATS_SEEN["finite"]:
                raise CannotCompare(f"no finite float value in {shown(args.a)} nor {shown(args.b)}: nothing to compare")
    except CannotCompare as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(2)
    except H5PY_ERRORS as e:  # damage the reads above did not name, a file gone meanwhile
        print(f"{PROG}: error: cannot read {shown(args.a)} or {shown(args.b)}: {shown(e)}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
