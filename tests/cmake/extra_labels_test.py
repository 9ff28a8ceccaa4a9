"""tests/extra_labels.txt's `python` line names every test that runs Python.

A test case runs Python when its body, its fixture class or a helper of its file
that it calls uses run_python, have_python_module or test_python, or when it is a
script test that calls /usr/bin/python3. Each such case must be listed, as its
suite or as Suite.Case, and every listed name must be such a test: so that
`ctest -L python` (or -LE python) is exactly the cross-checks against Python.

Usage: extra_labels_test.py SOURCE_DIR
"""
import pathlib
import re
import sys

PYTHON = re.compile(r"\b(run_python|have_python_module|test_python)\s*\(")
TEST = re.compile(r"^TEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)", re.M)
CLASS = re.compile(r"^class (\w+)\b[^;{]*\{", re.M)
FUNCTION = re.compile(r"^[\w:<>,&*\s]+?\b(\w+)\s*\([^;{]*\)\s*(?:const\s*)?\{", re.M)


def blank_literals(text):
    """The text with comments, string and character literals blanked (same length), so braces count."""
    out, i, n = list(text), 0, len(text)
    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i)
            delim = text[i + 2:open_paren]
            j = text.find(")" + delim + '"', open_paren)
            j = n if j < 0 else j + len(delim) + 2
            blank(i, j)
            i = j
        elif text[i] == "'" and 0 < i < n - 1 and text[i - 1].isalnum() and text[i + 1].isalnum():
            i += 1  # a digit separator: 50'000
        elif text[i] in "\"'":
            quote, j = text[i], i + 1
            while j < n and text[j] not in (quote, "\n"):
                j += 2 if text[j] == "\\" else 1
            j = min(j, n - 1)
            blank(i, j + 1)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def blocks(code):
    """(start, end) of each block that is a statement of a namespace (or of the file): a
    function, class or TEST, from the start of its header line to its closing brace."""
    out, stack = [], []  # stack: (is_namespace, header line start)
    for i, ch in enumerate(code):
        if ch == "{":
            start = code.rfind("\n", 0, i) + 1
            header = code[start:i].strip()
            stack.append((header.startswith("namespace"), start))
        elif ch == "}" and stack:
            is_namespace, start = stack.pop()
            if not is_namespace and all(ns for ns, _ in stack):
                out.append((start, i + 1))
    return out


def python_cases(path):
    text = path.read_text()
    spans = blocks(blank_literals(text))
    users, fixtures = set(), set()
    for begin, end in spans:
        body = text[begin:end]
        if not PYTHON.search(body):
            continue
        m = CLASS.match(body)
        if m:
            fixtures.add(m.group(1))
        elif not TEST.match(body):
            f = FUNCTION.match(body)
            if f:
                users.add(f.group(1))
    cases = set()
    for begin, end in spans:
        body = text[begin:end]
        m = TEST.match(body)
        if not m:
            continue
        suite, case = m.groups()
        calls = any(re.search(r"\b%s\s*\(" % re.escape(u), body) for u in users)
        if PYTHON.search(body) or calls or suite in fixtures:
            cases.add((suite, case))
    return cases


def main():
    root = pathlib.Path(sys.argv[1])
    listed = {}
    for line in (root / "tests" / "extra_labels.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            label, _, names = line.partition(":")
            listed[label.strip()] = set(names.split())
    python = listed.get("python", set())
    found = set()
    for path in sorted((root / "tests").rglob("*_test.cpp")):
        found |= python_cases(path)
    missing = sorted(f"{s}.{c}" for s, c in found if s not in python and f"{s}.{c}" not in python)
    suites = {s for s, _ in found} | {f"{s}.{c}" for s, c in found}
    # the script tests calling /usr/bin/python3
    scripts = {"zoo", "deploy.to_onnx_bad_inputs", "scripts.compare_predictions_bad_inputs",
               "scripts.salt_roundtrip_bad_inputs", "scripts.salt_site_layout", "scripts.ncu_summary_table", "bench.gn2_packed_check",
               "training.salt_training_parity", "training.salt_training_parity_tuners"}
    stale = sorted(n for n in python if n not in suites and n not in scripts)
    if missing:
        print("tests/extra_labels.txt: these run Python but are not in the python line:", " ".join(missing))
    if stale:
        print("tests/extra_labels.txt: these in the python line run no Python (or do not exist):", " ".join(stale))
    if missing or stale:
        sys.exit(1)
    print(f"python label: {len(found)} test cases in {len({s for s, _ in found})} suites, plus the script tests")


main()
