#!/usr/bin/env python3
"""Lays out salt itself and the pure-Python packages it needs as one folder for PYTHONPATH.

The GPU machines have torch, Lightning, torchmetrics, h5py and scipy, but no
package registry, and salt's other requirements are missing there. This script
copies each package's source from a checkout (git clones or `git archive`s, no
build, no network) into DEST, and writes the `<name>-<version>.dist-info/METADATA`
that pip would have written: Lightning's LightningCLI checks
`jsonargparse[signatures]` through importlib.metadata, extras included, so a
package on the path without its metadata would not do.

    python3 scripts/salt_site.py SOURCES DEST

SOURCES holds one checkout per package, named as on GitHub with '+' for '/':
  umami-hep+salt                  salt itself (the package `salt`)
  omni-us+jsonargparse            jsonargparse, with its `signatures` extra's two:
  rr-+docstring_parser            docstring_parser
  JelleZijlstra+typeshed_client   typeshed_client (bundles typeshed's stubs), which imports
  python+importlib_resources      importlib_resources
  umami-hep+atlas-ftag-tools      ftag
  lucidrains+lion-pytorch         lion_pytorch (salt's Lion optimiser)
  nikitapond+py-lap-solver        py_lap_solver (its pure-scipy solvers; salt's matcher imports it)
  [Lightning-AI+pytorch-lightning, Lightning-AI+torchmetrics, Lightning-AI+utilities:
   optional, for a machine without Lightning, as the dry run here]
Also two stand-in modules for compiled packages the GPU machines lack: `comet_ml`
(salt's main imports it for its side effects; the benchmark fits run without salt's
Comet logger) and `hdf5plugin` (atlas-ftag-tools imports it for LZ4/Zstd filters).

DEST is replaced once everything is in place. The folder is ~7 MB. Prints one line per package.
"""
import ast
import re
import shutil
import sys
from pathlib import Path


def version_in(path: Path) -> str:
    """The `__version__ = "..."` assigned in a Python file (or `version = '...'` in setup.py)."""
    text = path.read_text()
    m = re.search(r"^\s*(?:__version__|version)\s*=\s*(['\"][^'\"]+['\"])", text, re.M)
    if not m:
        raise SystemExit(f"salt_site.py: no version in {path}")
    return ast.literal_eval(m.group(1)).lstrip("v")


def pyproject_version(path: Path) -> str:
    m = re.search(r'^version\s*=\s*"([^"]+)"', path.read_text(), re.M)
    if not m:
        raise SystemExit(f"salt_site.py: no version in {path}")
    return m.group(1)


# name on PyPI, the checkout, the package folder inside it, where its version is,
# its Requires-Dist lines (only what a check through importlib.metadata reads).
PACKAGES = [
    ("salt-ml", "umami-hep+salt", "salt", lambda s: version_in(s / "salt/__init__.py"), []),
    ("jsonargparse", "omni-us+jsonargparse", "jsonargparse",
     lambda s: version_in(s / "jsonargparse/__init__.py"),
     ["PyYAML>=3.13", 'docstring-parser>=0.17; extra == "signatures"',
      'typeshed-client>=2.8.2; extra == "signatures"']),
    ("docstring-parser", "rr-+docstring_parser", "docstring_parser",
     lambda s: pyproject_version(s / "pyproject.toml"), []),
    ("typeshed-client", "JelleZijlstra+typeshed_client", "typeshed_client",
     lambda s: version_in(s / "typeshed_client/__init__.py"),
     ["importlib_resources>=1.4.0", "typing-extensions>=4.5.0"]),
    ("importlib-resources", "python+importlib_resources", "importlib_resources", lambda s: "6.5.2", []),
    ("atlas-ftag-tools", "umami-hep+atlas-ftag-tools", "ftag", lambda s: version_in(s / "ftag/__init__.py"), []),
    ("lion-pytorch", "lucidrains+lion-pytorch", "lion_pytorch", lambda s: version_in(s / "setup.py"), []),
    ("py-lap-solver", "nikitapond+py-lap-solver", "src/py_lap_solver",
     lambda s: pyproject_version(s / "pyproject.toml"), []),
]
OPTIONAL = [
    ("lightning", "Lightning-AI+pytorch-lightning", "src/lightning",
     lambda s: (s / "src/version.info").read_text().strip(), []),
    ("lightning-fabric", "Lightning-AI+pytorch-lightning", "src/lightning_fabric",
     lambda s: (s / "src/version.info").read_text().strip(), []),
    ("pytorch-lightning", "Lightning-AI+pytorch-lightning", "src/pytorch_lightning",
     lambda s: (s / "src/version.info").read_text().strip(), []),
    ("torchmetrics", "Lightning-AI+torchmetrics", "src/torchmetrics",
     lambda s: version_in(s / "src/torchmetrics/__about__.py"), []),
    ("lightning-utilities", "Lightning-AI+utilities", "src/lightning_utilities",
     lambda s: version_in(s / "src/lightning_utilities/__about__.py"), []),
]
# Stand-ins for two compiled packages the GPU machines lack, which salt's fit imports
# but never calls there.
STANDINS = {
    "comet_ml": '''"""A stand-in for comet_ml (scripts/salt_site.py).

salt's main module imports comet_ml for its side effects only; the fits this
folder serves run without salt's Comet logger, so nothing here is ever called.
"""
''',
    "hdf5plugin": '''"""A stand-in for hdf5plugin (scripts/salt_site.py).

atlas-ftag-tools' H5Writer imports it for its LZ4 and Zstd filters only; salt's
prediction files use h5py's own lzf or gzip unless told otherwise.
"""


def _missing(*args, **kwargs):
    raise ImportError("hdf5plugin is a stand-in here (scripts/salt_site.py): no LZ4 or Zstd filter")


LZ4 = Zstd = _missing
''',
}


def write_metadata(dest: Path, name: str, version: str, requires: list) -> None:
    info = dest / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    extras = sorted({m for r in requires for m in re.findall(r'extra == "([^"]+)"', r)})
    lines += [f"Provides-Extra: {e}" for e in extras]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    (info / "INSTALLER").write_text("scripts/salt_site.py\n")
    (info / "RECORD").write_text("")


def copy_package(sources: Path, dest: Path, entry, required: bool) -> bool:
    name, checkout, folder, version_of, requires = entry
    src = sources / checkout
    if not (src / folder).is_dir():
        if required:
            raise SystemExit(f"salt_site.py: {src / folder} is not a folder (SOURCES must hold {checkout})")
        return False
    version = version_of(src)
    shutil.copytree(src / folder, dest / Path(folder).name,
                    ignore=shutil.ignore_patterns("tests", "__pycache__", "*.pyc", "docs"))
    if (src / "src/version.info").is_file():  # Lightning's packages read their version from it
        shutil.copy(src / "src/version.info", dest / Path(folder).name / "version.info")
    write_metadata(dest, name, version, requires)
    print(f"salt_site: {name} {version} from {checkout}")
    return True


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    sources, dest = Path(sys.argv[1]), Path(sys.argv[2])
    if not sources.is_dir():
        print(f"salt_site.py: SOURCES {sources} is not a folder", file=sys.stderr)
        return 2
    # Written beside DEST and moved there whole: a failed run leaves no half a site.
    partial = dest.with_name(dest.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    try:
        for entry in PACKAGES:
            copy_package(sources, partial, entry, required=True)
        for entry in OPTIONAL:
            copy_package(sources, partial, entry, required=False)
    except SystemExit:
        shutil.rmtree(partial)
        raise
    for module, text in STANDINS.items():
        (partial / module).mkdir()
        (partial / module / "__init__.py").write_text(text)
        print(f"salt_site: {module} stand-in (imported by salt's fit, never called there)")
    if dest.exists():
        shutil.rmtree(dest)
    partial.rename(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
