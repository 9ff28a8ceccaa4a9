#!/usr/bin/env python3
"""lib/training's classes stay small enough to enter (docs/architecture.md's
conventions): no class or struct holds more than 20 data members, and none has
protected data members (a class that reaches another's fields through
inheritance). Reads the sources: each class body with comments, literals,
function bodies and template arguments removed, split into declarations.
Usage: class_fields_test.py SOURCE_DIR"""
import pathlib
import re
import sys

MAX_FIELDS = 20
root = pathlib.Path(sys.argv[1])


def strip(code):
    code = re.sub(r'R"(\w*)\((?:.|\n)*?\)\1"', '""', code)
    code = re.sub(r"//[^\n]*|/\*(?:.|\n)*?\*/", "", code)
    code = re.sub(r'"(?:\\.|[^"\\])*"', '""', code)
    code = re.sub(r"'(?:\\.|[^'\\])*'", "''", code)
    return re.sub(r"^\s*#[^\n]*", "", code, flags=re.M)


def without_angles(text):
    """Template arguments removed (std::function<void(int)> -> std::function<>)."""
    out, depth = [], 0
    for i, ch in enumerate(text):
        if ch == "<" and (i == 0 or text[i - 1] not in "<="):
            depth += 1
            continue
        if ch == ">" and depth and text[i - 1] != "-":
            depth -= 1
            continue
        if not depth:
            out.append(ch)
    return "".join(out)


def bodies(code):
    """(name, body at the class's own depth) of every class or struct defined in code."""
    for m in re.finditer(r"\b(?:class|struct)\s+(\w+)\s*(?:final\s*)?(?::[^;{()]*)?\{", code):
        i, depth, own = m.end(), 1, []
        while depth and i < len(code):
            ch = code[i]
            if ch == "{":
                depth += 1
                if depth == 2:
                    own.append("{}")  # a function body, an initializer, a nested type
            elif ch == "}":
                depth -= 1
            elif depth == 1:
                own.append(ch)
            i += 1
        yield m.group(1), "".join(own)


def fields(body):
    """(count, protected count) of the data members declared in a class body."""
    count = protected = 0
    access = "private"
    for statement in without_angles(body).split(";"):
        text = " ".join(statement.split())
        while True:  # access labels lead the statement they precede
            label = re.match(r"^(public|private|protected)\s*:\s*", text)
            if not label:
                break
            access, text = label.group(1), text[label.end():]
        text = re.sub(r"^.*\{\}\s*", "", text)  # what a function body or nested type ended
        if not text or re.match(r"^(using|friend|static|typedef|template|enum|class|struct)\b", text) or "operator" in text:
            continue
        if "(" in re.sub(r"\{[^}]*\}|=.*", "", text):
            continue  # a function (or a constructor)
        if not re.match(r"^[\w:&*\s]+\s*[\w]+\s*(\[[^\]]*\])?\s*(\{\}|\{[^}]*\}|=.*)?(,\s*\w+\s*(\{[^}]*\}|=[^,]*)?)*$", text):
            continue
        names = 1 + len(re.findall(r",\s*\w+\s*(?=\{|=|,|$)", text))
        count += names
        if access == "protected":
            protected += names
    return count, protected


failures = []
for path in sorted((root / "lib" / "training").rglob("*")):
    if path.suffix not in (".h", ".cpp"):
        continue
    for name, body in bodies(strip(path.read_text())):
        count, protected = fields(body)
        where = f"{path.relative_to(root)}: {name}"
        if count > MAX_FIELDS:
            failures.append(f"{where} has {count} data members (at most {MAX_FIELDS}: group them into parts)")
        if protected:
            failures.append(f"{where} has {protected} protected data member(s): hand them over, not inherit them")
        if "-v" in sys.argv:
            print(count, where)
for f in failures:
    print(f)
if failures:
    sys.exit(1)
print(f"class_fields_test: lib/training's classes hold at most {MAX_FIELDS} data members, none protected")
