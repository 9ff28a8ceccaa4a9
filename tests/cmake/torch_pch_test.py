"""cmake/TorchPch.cmake's rules, read off the build's compile_commands.json.

A regression here costs minutes of every build without breaking anything else:
a file that never includes torch must not get the precompiled torch header, a
file that does must, and the tests must compile at -O0 with their own header.
Usage: torch_pch_test.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import shlex
import sys

build, source = sys.argv[1], sys.argv[2]
with open(os.path.join(build, "compile_commands.json")) as f:
    entries = json.load(f)
commands = {}
for e in entries:
    path, args = e["file"], shlex.split(e["command"])
    if not os.path.isabs(path):
        path = os.path.join(e["directory"], path)
    commands[os.path.relpath(path, source)] = args
    # A unity batch (cmake/UnityBatches.cmake) compiles its members with its command.
    if os.path.dirname(path) == os.path.join(build, "lib", "unity"):
        with open(path) as batch:
            for line in batch:
                if line.startswith('#include "'):
                    commands[os.path.join("lib", line.split('"')[1])] = args


def pch_of(args):
    """The precompiled header target a command includes, or None (GCC: -include
    <dir>/cmake_pch.hxx; clang: -Xclang -include-pch -Xclang <dir>/cmake_pch.hxx.pch)."""
    for i, a in enumerate(args[:-1]):
        nxt = args[i + 1]
        if (a == "-include" and nxt.endswith("cmake_pch.hxx")) or (a == "-Xclang" and nxt.endswith("cmake_pch.hxx.pch")):
            return os.path.basename(os.path.dirname(nxt)).removesuffix(".dir")
    return None


def opt_level(args):
    return [a for a in args if a.startswith("-O")][-1]


failures = []


def expect(path, pch, level):
    args = commands.get(path)
    if args is None:
        failures.append(f"{path}: not in compile_commands.json")
        return
    got = (pch_of(args), opt_level(args))
    if got != (pch, level):
        failures.append(f"{path}: precompiled header {got[0]}, {got[1]}; expected {pch}, {level}")


# Library files: torch users get salt_pch, the others (same torch targets) none.
expect("lib/models/layers/attention.cpp", "salt_pch", "-O2")
expect("lib/training/loop/fit.cpp", "salt_pch", "-O2")
expect("lib/submit/submit_htcondor.cpp", None, "-O2")  # salt_submit links torch, this file never includes it
expect("lib/data/h5_file.cpp", None, "-O2")
expect("lib/cli/tool_commands.cpp", None, "-O2")
# Tests: -O0, salt_test_pch where torch is reached (here through our own headers only).
expect("tests/models/param_count_test.cpp", "salt_test_pch", "-O0")
expect("tests/training/loop/fit_test.cpp", "salt_test_pch", "-O0")
expect("tests/submit/slurm_submit_test.cpp", None, "-O0")
expect("tests/config/compose_rules_test.cpp", None, "-O0")

# And on the whole, among the library files compiled with torch's include path (the
# torch targets): both kinds exist in numbers, so a scan that marks everything or
# nothing fails here even if the sentinels above were moved.
torch_files = {
    p: a for p, a in commands.items() if p.startswith("lib/") and any(x.startswith("/") and "torch" in x for x in a)
}
with_pch = sum(1 for a in torch_files.values() if pch_of(a))
without = len(torch_files) - with_pch
if with_pch < 50 or without < 30:
    failures.append(f"lib/: {with_pch} files with the precompiled header, {without} without; expected 50+ with, 30+ without")

for line in failures:
    print(line)
print(f"torch_pch_test: of the {len(torch_files)} files of torch libraries, {with_pch} with the precompiled header, {without} without")
sys.exit(1 if failures else 0)
