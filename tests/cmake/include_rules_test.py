#!/usr/bin/env python3
"""build.include_rules: every lib/ folder includes only the folders that
docs/architecture.md's table ("What each folder may include") names for it, every
lib/ folder has a row, and torch stays out of config/ and core/ (but
core/torch_compat.h). A folder split into sub-folders (models/, training/) has a row
for each sub-folder too: its files may include their own sub-folder and only the
sibling sub-folders and top files of the folder that its row names (training/step/
never includes training/loop/, training/optim/ no other sub-folder, ...). The table is
the rule: change it there, with the reason.

Usage: include_rules_test.py SOURCE_DIR
"""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1])
doc = (root / "docs" / "architecture.md").read_text()
section = doc.split("## What each folder may include", 1)[1].split("\n## ", 1)[0]

allowed = {}
# folder -> sub-folder -> (sibling sub-folders, files at the folder's top) it may include
allowed_within = {}
for line in section.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    row = re.fullmatch(r"`([a-z_]+)/(?:([a-z_]+)/)?`", cells[0]) if len(cells) == 3 else None
    if not row:
        continue
    folder, sub = row.groups()
    rule = cells[2]
    if sub:
        siblings = set(re.findall(rf"`{folder}/([a-z_]+)/`", rule))
        top_files = set(re.findall(rf"`{folder}/([a-z_]+\.h)`", rule))
        allowed_within.setdefault(folder, {})[sub] = (siblings, top_files)
        continue
    allowed[folder] = None if rule.startswith("everything") else set(re.findall(r"`([a-z_]+)/`", rule))

failures = []
folders = sorted(p.name for p in (root / "lib").iterdir() if p.is_dir())
for folder in folders:
    if folder not in allowed:
        failures.append(f"lib/{folder}/ has no row in docs/architecture.md's include table")

# Every sub-folder needs its row, in a folder newly split too (then nothing of it
# would be checked within otherwise).
for folder in folders:
    subs = allowed_within.get(folder, {})
    present = sorted(p.name for p in (root / "lib" / folder).iterdir() if p.is_dir())
    for sub in present:
        if sub not in subs:
            failures.append(f"lib/{folder}/{sub}/ has no row in docs/architecture.md's include table")
    for sub in sorted(set(subs) - set(present)):
        failures.append(f"docs/architecture.md's include table has a row for lib/{folder}/{sub}/, which does not exist")


def check_within(folder, rel, text):
    """The includes of a file in a sub-folder of `folder` that reach into `folder`."""
    sub = rel.parts[2]
    siblings, top_files = allowed_within[folder][sub]
    for target in re.findall(rf'^\s*#\s*include\s*"{folder}/([^"]+)"', text, re.M):
        parts = target.split("/")
        if len(parts) == 1 and parts[0] not in top_files:
            failures.append(f"{rel} includes {folder}/{target}, which lib/{folder}/{sub}/ may not "
                            "(docs/architecture.md)")
        elif len(parts) > 1 and parts[0] != sub and parts[0] not in siblings:
            failures.append(f"{rel} includes {folder}/{parts[0]}/, which lib/{folder}/{sub}/ may not "
                            "(docs/architecture.md)")


include = re.compile(r'^\s*#\s*include\s*"([a-z_]+)/[^"]+"', re.M)
torch = re.compile(r"^\s*#\s*include\s*<(torch|ATen|c10)/", re.M)
checked = 0
for folder in folders:
    rule = allowed.get(folder, set())
    for path in sorted((root / "lib" / folder).rglob("*")):
        if path.suffix not in (".h", ".cpp", ".cu", ".cuh"):
            continue
        checked += 1
        text = path.read_text()
        rel = path.relative_to(root)
        for target in include.findall(text):
            if target != folder and rule is not None and target not in rule:
                failures.append(f"{rel} includes {target}/, which lib/{folder}/ may not (docs/architecture.md)")
        if folder in allowed_within and len(rel.parts) > 3 and rel.parts[2] in allowed_within[folder]:
            check_within(folder, rel, text)
        if folder in ("config", "core") and path.name != "torch_compat.h" and torch.search(text):
            failures.append(f"{rel} includes torch, which lib/{folder}/ may not")

print(f"include_rules_test: {checked} files of {len(folders)} folders checked")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
