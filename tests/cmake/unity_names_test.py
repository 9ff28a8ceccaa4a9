#!/usr/bin/env python3
"""SALT_UNITY_BUILD compiles each library in batches of files (lib/CMakeLists.txt):
two files of one library that define the same name in their anonymous namespaces
(a `kRegistered`, a `binding()`) then no longer compile together. This reads the
per-file objects of the ordinary build (nm) and fails on such a name, so the unity
build keeps compiling without building it here.
Usage: unity_names_test.py BUILD_DIR"""
import collections
import pathlib
import re
import subprocess
import sys

build = pathlib.Path(sys.argv[1])
clashes = []
libs = sorted((build / "lib" / "CMakeFiles").glob("salt_*.dir"))
if not libs:
    sys.exit(f"unity_names_test: no library objects under {build}/lib/CMakeFiles")
checked = 0
for lib in libs:
    if lib.name.startswith("salt_pch"):
        continue
    owners = collections.defaultdict(set)
    for obj in sorted(lib.rglob("*.o")):
        if "Unity" in obj.parts:
            continue
        checked += 1
        out = subprocess.run(["nm", "-C", "--defined-only", str(obj)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split(" ", 2)
            if len(parts) < 3 or parts[1] not in "tdbr":  # local text, data, bss, read-only
                continue
            name = parts[2]
            if "(anonymous namespace)::" not in name:
                continue
            key = name.split("(anonymous namespace)::", 1)[1]
            if "$_" in key or "{lambda" in key:  # the compiler's names for lambdas, and what they hold
                continue
            # A function by its name and parameters (overloads may coexist; the same
            # parameters clash, whatever the return types); a class by its name.
            head = re.match(r"[A-Za-z_]\w*", key)
            if head and key[head.end():].startswith("::"):
                key = head.group(0)
            owners[key].add(obj.name.removesuffix(".o"))
    for key, files in sorted(owners.items()):
        if len(files) > 1:
            clashes.append(f"{lib.name.removesuffix('.dir')}: '{key}' in {', '.join(sorted(files))}")
print(f"unity_names_test: {checked} objects read")
if clashes:
    print("names defined in the anonymous namespaces of two files of one library "
          "(they clash in SALT_UNITY_BUILD's batches; rename one):")
    print("\n".join(clashes))
    sys.exit(1)
print("unity_names_test: no name repeats across the files of a library")
