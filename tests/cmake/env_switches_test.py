"""Every environment variable of salt-cpp's own is declared once, in
lib/core/env_switches.cpp, and documented.

Fails on:
- a "SALT_..." string in lib/ or app/ that names no declared variable (a switch
  read, set or named in a message without its entry in the table);
- a getenv( call on a SALT_ name outside lib/core/env_switches.cpp;
- a declared variable that no file in docs/ other than the generated
  environment.md mentions. (The scripts' own variables, SALT_PY, SALT_GPU_ONLY and
  the like, are theirs: docs/ may name them.)
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
table_file = root / "lib" / "core" / "env_switches.cpp"
declared = set(re.findall(r'\{"([A-Z][A-Z0-9_]+)",', table_file.read_text()))
problems = []
if "SALT_CUDA_GRAPHS" not in declared or len(declared) < 10:
    problems.append(f"{table_file}: the table was not found (read {sorted(declared)})")

# Build options (CMake -D...), compile-time macros and test-only variables: not
# read by salt-cpp from the environment.
not_switches = {"SALT_CUDA", "SALT_CUDA_KERNELS", "SALT_HAVE_CAIRO", "SALT_HAVE_NCCL", "SALT_HAVE_GLOO",
                "SALT_GLOO_INCLUDE_DIR", "SALT_TORCH_AT_LEAST", "SALT_FIELD", "SALT_MEMBER", "SALT_HD",
                "SALT_INLINE", "SALT_BLOCK_SYNC", "SALT_NOTE_KERNEL_ONCE", "SALT_X", "SALT_ALLOW_SKIPS",
                "SALT_BUILD_DIR", "SALT_REQUIRE", "SALT_UNITY", "SALT_COMMIT", "SALT_GPU_BUDGET_S"}

string_name = re.compile(r'"(SALT_[A-Z0-9_]*[A-Z0-9])')
getenv_salt = re.compile(r'getenv\(\s*"SALT_')
for folder in ("lib", "app"):
    for path in sorted((root / folder).rglob("*")):
        if path.suffix not in {".cpp", ".h", ".cu", ".cuh"}:
            continue
        text = path.read_text(errors="replace")
        rel = path.relative_to(root)
        for n, line in enumerate(text.splitlines(), 1):
            for name in string_name.findall(line):
                if name not in declared and name not in not_switches:
                    problems.append(f"{rel}:{n}: {name} is not declared in lib/core/env_switches.cpp")
            if getenv_salt.search(line) and path != table_file:
                problems.append(f"{rel}:{n}: reads a SALT_ variable with getenv; use env_value (core/env_switches.h)")

docs = {p: p.read_text() for p in (root / "docs").glob("*.md") if p.name != "environment.md"}
for name in sorted(declared):
    if name == "SALT_SET_GOMP_SPINCOUNT":
        continue  # salt-cpp's own marker, not for users
    if not any(re.search(rf"\b{name}\b", text) for text in docs.values()):
        problems.append(f"{name} is documented nowhere in docs/ (besides the generated environment.md)")

for p in problems:
    print(p)
if problems:
    sys.exit(1)
print(f"{len(declared)} environment variables, each declared once and documented")
