#!/usr/bin/env python3
"""build.include_rules: every lib/ folder includes only the folders that
docs/architecture.md's table ("What each folder may include") names for it, every
lib/ folder has a row, and torch stays out of config/ and core/ (but
core/torch_compat.h). The table is the rule: change it there, with the reason.

Usage: include_rules_test.py SOURCE_DIR
"""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1])
doc = (root / "docs" / "architecture.md").read_text()
section = doc.split("## What each folder may include", 1)[1].split("\n## ", 1)[0]

allowed = {}
for line in section.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) != 3 or not re.fullmatch(r"`[a-z_]+/`", cells[0]):
        continue
    folder = cells[0].strip("`/")
    rule = cells[2]
    allowed[folder] = None if rule.startswith("everything") else set(re.findall(r"`([a-z_]+)/`", rule))

failures = []
folders = sorted(p.name for p in (root / "lib").iterdir() if p.is_dir())
for folder in folders:
    if folder not in allowed:
        failures.append(f"lib/{folder}/ has no row in docs/architecture.md's include table")

include = re.compile(r'^\s*#\s*include\s*"([a-z_]+)/[^"]+"', re.M)
torch = re.compile(r"^\s*#\s*include\s*<(torch|ATen|c10)/", re.M)
checked = 0
for folder in folders:
    rule = allowed.get(folder, set())
    for path in sorted((root / "lib" / folder).rglob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        checked += 1
        text = path.read_text()
        rel = path.relative_to(root)
        for target in include.findall(text):
            if target != folder and rule is not None and target not in rule:
                failures.append(f"{rel} includes {target}/, which lib/{folder}/ may not (docs/architecture.md)")
        if folder in ("config", "core") and path.name != "torch_compat.h" and torch.search(text):
            failures.append(f"{rel} includes torch, which lib/{folder}/ may not")

print(f"include_rules_test: {checked} files of {len(folders)} folders checked")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
