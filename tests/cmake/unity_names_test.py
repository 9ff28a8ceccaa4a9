#!/usr/bin/env python3
"""The unity build (SALT_UNITY_BUILD, lib/CMakeLists.txt: what scripts/build.sh builds)
compiles each library's files in batches: a name with internal linkage that two files
of one library both define (an anonymous-namespace `I()`, a `static` helper, a
`constexpr` constant at namespace scope) then no longer compiles. This reads the
sources, not objects (a helper inlined at -O2 leaves no symbol to see), and fails on
such a name in any two files of a library, whichever batches they fall in today.
Usage: unity_names_test.py SOURCE_DIR"""
import collections
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
lib = root / "lib"


def libraries():
    """{library: [its .cpp files]} from the salt_library(... DIRS ...) calls."""
    text = (lib / "CMakeLists.txt").read_text()
    libs = {}
    for name, dirs in re.findall(r"salt_library\((\w+)\s+DIRS\s+([^)]*)\)", text):
        libs[name] = sorted(f for d in dirs.split() for f in (lib / d).glob("*.cpp"))
    return libs


def strip(code):
    """The code without comments, string and character literals, and preprocessor lines."""
    code = re.sub(r'R"(\w*)\((?:.|\n)*?\)\1"', '""', code)  # raw strings
    out, i, n = [], 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("//", i):
            i = code.find("\n", i)
            i = n if i < 0 else i
        elif code.startswith("/*", i):
            j = code.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif c in "\"'":
            j = i + 1
            while j < n and code[j] != c:
                j += 2 if code[j] == "\\" else 1
            out.append('""' if c == '"' else "0")
            i = j + 1
        else:
            out.append(c)
            i += 1
    lines = "".join(out).split("\n")
    kept, continued = [], False
    for line in lines:  # drop #include/#define/... and their continuations
        directive = continued or line.lstrip().startswith("#")
        continued = directive and line.rstrip().endswith("\\")
        kept.append("" if directive else line)
    return "\n".join(kept)


TOKEN = re.compile(r"[A-Za-z_]\w*|::|->|\d[\w.']*|\S")
KEYWORDS = {"const", "constexpr", "static", "inline", "extern", "thread_local", "mutable", "volatile",
            "unsigned", "signed", "struct", "class", "enum", "union", "typename", "auto", "int", "long",
            "short", "char", "bool", "float", "double", "void", "noexcept", "override", "final"}


def past_match(tokens, i, opening, closing):
    """The index after the token that closes the `opening` at tokens[i]."""
    depth, j = 0, i
    while j < len(tokens):
        depth += tokens[j] == opening
        depth -= tokens[j] == closing
        j += 1
        if depth == 0:
            break
    return j


def statements(tokens):
    """Namespace-scope declarations: (tokens of the declaration, internal) where internal
    says whether it sits in an anonymous namespace. A brace that opens a namespace is
    entered; any other brace block (a body, an initialiser) is kept whole in its
    declaration."""
    scopes = []  # True for an anonymous namespace, False for a named one
    current, i = [], 0
    while i < len(tokens):
        t = tokens[i]
        if t == "namespace" and not current:
            j = i + 1
            while j < len(tokens) and tokens[j] not in ("{", ";", "="):
                j += 1
            if j < len(tokens) and tokens[j] == "{":
                scopes.append(j == i + 1)  # `namespace {`: anonymous
                i = j + 1
                continue
        if t == "}" and not current:
            if scopes:
                scopes.pop()
            i += 1
            continue
        if t == "{":  # a block inside the declaration: skip to its end
            j = past_match(tokens, i, "{", "}")
            current.extend(["{", "}"])
            i = j
            ends = j >= len(tokens) or tokens[j] not in (";", ",", ")", "=")
            is_function_or_type = "(" in current or current[0] in ("struct", "class", "enum", "union", "template")
            if ends and is_function_or_type:
                yield current, any(scopes)
                current = []
            continue
        if t == ";":
            if current:
                yield current, any(scopes)
            current = []
            i += 1
            continue
        current.append(t)
        i += 1


def skip_template(decl):
    if decl and decl[0] == "template" and len(decl) > 1 and decl[1] == "<":
        return decl[past_match(decl, 1, "<", ">"):]
    return decl


def parameter_types(params):
    """A parameter list's types: each parameter without its name and default value."""
    kinds, depth, part = [], 0, []
    for t in params + [","]:
        if t in "(<[{":
            depth += 1
        elif t in ")>]}":
            depth -= 1
        if t == "," and depth == 0:
            if "=" in part:
                part = part[:part.index("=")]
            if len(part) > 1 and re.fullmatch(r"[A-Za-z_]\w*", part[-1]) and part[-1] not in KEYWORDS:
                part = part[:-1]
            kinds.append(" ".join(part))
            part = []
        else:
            part.append(t)
    return tuple(k for k in kinds if k)


def internal_names(decl, internal):
    """The names with internal linkage a declaration defines, as comparable keys."""
    decl = skip_template(decl)
    if not decl or decl[0] in ("using", "typedef", "friend", "static_assert", "extern", "namespace"):
        return []  # aliases may be redeclared alike; extern ones are not defined here
    static = "static" in decl[:6]  # after `[[maybe_unused]]` too
    if decl[0] in ("struct", "class", "enum", "union"):
        name = next((t for t in decl[1:] if t not in ("class", "struct")), None)
        defined = "{" in decl and internal
        return [("type", name)] if defined and name and re.fullmatch(r"[A-Za-z_]\w*", name) else []
    if "(" in decl and "=" not in decl[:decl.index("(")]:
        at = decl.index("(")
        name = decl[at - 1] if at else ""
        if at >= 2 and decl[at - 2] == "operator":
            return []
        if not re.fullmatch(r"[A-Za-z_]\w*", name) or "::" in decl[max(0, at - 2):at]:
            return []  # a member defined out of line, or a constructor call
        if not (internal or static) or decl[-1] != "}":
            return []
        j = past_match(decl, at, "(", ")") - 1  # the closing parenthesis
        # Keyed by name and arity: overloads of other arities coexist in a batch, while
        # the same arity clashes or turns ambiguous (and template parameters' names,
        # `T` in one file and `U` in the other, hide nothing).
        return [("function", name, len(parameter_types(decl[at + 1:j])))]
    # a variable: const/constexpr at namespace scope has internal linkage too
    constant = ("const" in decl or "constexpr" in decl) and "inline" not in decl
    if not (internal or static or constant):
        return []
    stop = next((k for k, t in enumerate(decl) if t in ("=", "{", "[")), len(decl))
    name = decl[stop - 1] if stop else ""
    return [("variable", name)] if re.fullmatch(r"[A-Za-z_]\w*", name) and name not in KEYWORDS else []


def describe(key):
    if key[0] == "function":
        return f"{key[1]}() with {key[2]} parameter{'s' if key[2] != 1 else ''}"
    return key[1]


clashes, files_read = [], 0
libs = libraries()
if not libs:
    sys.exit(f"unity_names_test: no salt_library(... DIRS ...) in {lib}/CMakeLists.txt")
def macros(text):
    """The macros a file defines and leaves defined: in a batch they reach the files after it."""
    defined = set(re.findall(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", text, re.M))
    return defined - set(re.findall(r"^[ \t]*#[ \t]*undef[ \t]+([A-Za-z_]\w*)", text, re.M))


for name, files in sorted(libs.items()):
    owners = collections.defaultdict(set)
    for path in files:
        files_read += 1
        text = path.read_text()
        for macro in macros(text):
            owners[("macro", macro)].add(str(path.relative_to(root)))
        tokens = TOKEN.findall(strip(text))
        for decl, internal in statements(tokens):
            for key in internal_names(decl, internal):
                owners[key].add(str(path.relative_to(root)))
    for key, where in sorted(owners.items(), key=lambda kv: describe(kv[0])):
        if len(where) > 1:
            clashes.append(f"{name}: {key[0]} '{describe(key)}' in {', '.join(sorted(where))}")
print(f"unity_names_test: {files_read} files of {len(libs)} libraries read")
if clashes:
    print("names with internal linkage defined in two files of one library (they clash in "
          "the unity build's batches; share one definition or rename one):")
    print("\n".join(clashes))
    sys.exit(1)
print("unity_names_test: no internal name repeats across the files of a library")
