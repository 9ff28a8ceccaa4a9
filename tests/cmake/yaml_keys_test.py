#!/usr/bin/env python3
"""build.yaml_keys: docs/architecture.md's "nothing outside lib/config reads the
YAML by key", held. Every lib/ file outside lib/config is scanned for a yaml-cpp
node read by a string literal:

  node["key"]              a YAML::Node (a variable, parameter or member declared as
                           one, or taken from one: `auto a = t["init_args"]`, a range-for
                           over one, `kv.second`) indexed by a literal and read. Building
                           a YAML document is no read: `node["a"]["b"] = v`,
                           `node["a"].push_back(v)` (metadata.yaml, ONNX metadata);
  config[...]              a node named `config` (ResolvedConfig::config, RunSetup::config,
                           a copy of them), read or written: config.yaml changes only
                           through lib/config (config::apply_edit, config/config_edit.h:
                           with the typed settings; config/bake.h, salt_readable.h);
  at/get/has_key(n, "key") the by-key lookups of config/yaml_util.h and their copies.

Code reads the config through config::RunConfig and the bindings instead (a new
key goes into a binding, docs/architecture.md "One declaration per key"). A YAML
document that is not the run's config (a norm dict, an ONNX Runtime answer, ...)
may be read by key: its file is listed in EXCEPTIONS with the reason.

Usage: yaml_keys_test.py SOURCE_DIR   (prints each read as file:line: text)
"""
import re
import sys
from pathlib import Path

# (file, the node read there or "" for any) -> why it may read a YAML document by
# key: none of them is the run's config.
EXCEPTIONS = {
    ("lib/data/norm_dict.cpp", ""): "reads a norm dict file (salt's own format: variable -> mean, std)",
    ("lib/deploy/ort_runner.cpp", ""): "reads the answer of the ONNX Runtime helper process (jets -> outputs)",
    ("lib/deploy/check.cpp", ""): "reads the answer of the ONNX Runtime helper process (jets -> outputs)",
    ("lib/submit/sweep.cpp", ""): "reads a sweep file (grid/list of --key=value settings)",
    ("lib/training/loop/run_files.cpp", "info.git"): "reads the git state (repro::git_info_yaml) for metadata.yaml",
    ("lib/training/loop/run_files.cpp", "meta"): "rewrites metadata.yaml (salt-cpp's record of the run) at a stage's end",
    ("lib/training/step/step_options.cpp", "step_options"): "rewrites metadata.yaml's step_options (what the graphs did)",
}

root = Path(sys.argv[1])
IDENT = r"[A-Za-z_]\w*"
LITERAL_INDEX = re.compile(r'\[\s*"[^"\\]*"\s*\]')
HELPER = re.compile(r'\b(?:at|get|has_key)\(\s*[^(),]+,\s*"[^"\\]*"\s*\)')
DECL = re.compile(r"YAML::Node\s*&{0,2}\s*(" + IDENT + r")\s*[;,=){(\[]")
MEMBER_DECL = re.compile(r"^\s*(?:const\s+)?YAML::Node\s+(" + IDENT + r")\s*(?:;|\{|=)", re.M)


def strip_comments(text):
    """Comments and the contents of character literals out; line numbers kept."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def member_names():
    """YAML::Node members declared in lib/ headers (ResolvedConfig::config, RunSetup::config, ...)."""
    names = set()
    for header in (root / "lib").rglob("*.h"):
        names.update(MEMBER_DECL.findall(strip_comments(header.read_text())))
    return names


def yaml_names(text):
    """Names in one file that hold a YAML node: declared as one, or taken from one."""
    names = set(DECL.findall(text))
    while True:
        alt = "|".join(sorted(map(re.escape, names))) or "(?!)"
        source = r"(?:(?:\w+(?:\.|->))*(?:" + alt + r")\b(?:\.(?:first|second))?\s*\[|(?:config::)?(?:at|get)\()"
        taken = re.findall(r"\bauto\s*&{0,2}\s*(" + IDENT + r")\s*=\s*" + source, text)
        taken += re.findall(r"\bauto\s*&{0,2}\s*(" + IDENT + r")\s*:\s*(?:\w+(?:\.|->))*(?:" + alt + r")\b", text)
        taken += re.findall(r"\bauto\s*&{0,2}\s*\[\s*\w+\s*,\s*(" + IDENT + r")\s*\]\s*:\s*(?:" + alt + r")\b", text)
        grown = names | set(taken)
        if grown == names:
            return names
        names = grown


def reads(text, names):
    """(line, snippet) of each by-key read of a node named in `names`."""
    alt = "|".join(sorted(map(re.escape, names)))
    found = []
    if alt:
        chain = re.compile(r"(?<![\w.>])(?:\w+(?:\.|->))*(?:" + alt + r")\b(?:\.(?:first|second))?"
                           r"((?:\s*\[[^\]\[]*\])+)")
        for m in chain.finditer(text):
            indices = re.findall(r"\[[^\]\[]*\]", m.group(1))
            literal = [bool(LITERAL_INDEX.fullmatch(i.replace(" ", ""))) for i in indices]
            after = text[m.end():m.end() + 40]
            built = re.match(r"\s*(?:=(?!=)|\.(?:push_back|remove|reset|SetStyle)\()", after) is not None
            # A chain that is assigned (or appended to) builds a document; anything else reads.
            read = any(literal) and not built
            config_itself = re.search(r"\bconfig$", m.group(0)[:m.start(1) - m.start()]) is not None
            if read or config_itself:
                found.append((text.count("\n", 0, m.start()) + 1, m.group(0).strip()))
    for m in HELPER.finditer(text):
        found.append((text.count("\n", 0, m.start()) + 1, m.group(0)))
    return found


def main():
    members = member_names()
    failures, excepted, used = [], [], set()
    for path in sorted((root / "lib").rglob("*")):
        if path.suffix not in (".h", ".cpp") or path.is_relative_to(root / "lib" / "config"):
            continue
        rel = path.relative_to(root).as_posix()
        text = strip_comments(path.read_text())
        names = yaml_names(text) | members
        for line, snippet in reads(text, names):
            reason = [k for k in EXCEPTIONS if k[0] == rel and snippet.startswith(k[1])]
            (excepted if reason else failures).append(f"{rel}:{line}: {snippet}")
            used.update(reason)
    stale = [f"{f} {n}".strip() for f, n in EXCEPTIONS if (f, n) not in used]
    print(f"yaml_keys_test: {len(excepted)} reads in the {len(EXCEPTIONS)} excepted files "
          f"(not the config); {len(failures)} elsewhere")
    for f in failures:
        print("FAIL: reads the YAML by key outside lib/config:", f)
    for f in stale:
        print(f"FAIL: EXCEPTIONS names {f}, which reads nothing by key now: take it out")
    sys.exit(1 if failures or stale else 0)


main()
