#!/usr/bin/env bash
# scripts/salt_site.py on checkouts laid out as GitHub's (small stand-in packages with
# the real projects' version files): the folder it writes imports each package, and
# importlib.metadata reads what LightningCLI's requirement check reads, extras included
# (lightning_utilities' RequirementCache("jsonargparse[signatures]>=4.39.0")); a missing
# checkout is one line and a non-zero exit. Usage: salt_site_layout.sh WORK_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$1
rm -rf "$work"
mkdir -p "$work"
src=$work/sources
package() {  # package CHECKOUT FOLDER VERSION_FILE VERSION_LINE
  mkdir -p "$src/$1/$2"
  echo "VALUE = '$1'" >"$src/$1/$2/__init__.py"
  mkdir -p "$(dirname "$src/$1/$3")"
  echo "$4" >>"$src/$1/$3"
}
package umami-hep+salt salt salt/__init__.py '__version__ = "0.13.0"'
package omni-us+jsonargparse jsonargparse jsonargparse/__init__.py '__version__ = "4.49.0"'
package rr-+docstring_parser docstring_parser pyproject.toml 'version = "0.18.0"'
package JelleZijlstra+typeshed_client typeshed_client typeshed_client/__init__.py '__version__ = "2.12.0"'
package python+importlib_resources importlib_resources pyproject.toml ''
package umami-hep+atlas-ftag-tools ftag ftag/__init__.py '__version__ = "v0.3.2"'
package lucidrains+lion-pytorch lion_pytorch setup.py "  version = '0.2.3',"
package nikitapond+py-lap-solver src/py_lap_solver pyproject.toml 'version = "0.1.4"'
mkdir -p "$src/umami-hep+salt/salt/tests" && echo "x = 1" >"$src/umami-hep+salt/salt/tests/test_x.py"

py=/usr/bin/python3
"$py" "$root/scripts/salt_site.py" "$src" "$work/site" >"$work/out.txt"
grep -q "salt_site: jsonargparse 4.49.0 from omni-us+jsonargparse" "$work/out.txt"
PYTHONPATH=$work/site "$py" - <<'PY'
import re
from importlib.metadata import distribution, version
import comet_ml, ftag, hdf5plugin, jsonargparse, lion_pytorch, py_lap_solver, salt


def at_least(have, want):
    return tuple(map(int, have.split("."))) >= tuple(map(int, want.split(".")))


assert salt.VALUE == "umami-hep+salt" and py_lap_solver.VALUE == "nikitapond+py-lap-solver"
assert version("salt-ml") == "0.13.0" and version("atlas-ftag-tools") == "0.3.2", version("atlas-ftag-tools")
assert version("lion-pytorch") == "0.2.3" and version("py-lap-solver") == "0.1.4"
# RequirementCache("jsonargparse[signatures]>=4.39.0"): the version, then each requirement the extra adds installed
# at its version (Requires-Dist lines "name>=v; extra == \"signatures\"", parsed by hand: no packaging here)
assert at_least(version("jsonargparse"), "4.39.0")
extra = [re.match(r'([A-Za-z0-9_.-]+)>=([0-9.]+); extra == "signatures"$', r)
         for r in distribution("jsonargparse").metadata.get_all("Requires-Dist")]
extra = [m.groups() for m in extra if m]
assert sorted(n for n, _ in extra) == ["docstring-parser", "typeshed-client"], extra
for name, least in extra:
    assert at_least(distribution(name).version, least), (name, distribution(name).version)
assert "signatures" in distribution("jsonargparse").metadata.get_all("Provides-Extra")
try:
    hdf5plugin.LZ4()
except ImportError as e:
    assert "stand-in" in str(e)
else:
    raise AssertionError("the hdf5plugin stand-in made a filter")
PY
[ ! -e "$work/site/salt/tests" ]  # a package's tests stay behind

# A checkout missing: one line naming it, nothing half-written left as a site.
rm -rf "$src/lucidrains+lion-pytorch"
if "$py" "$root/scripts/salt_site.py" "$src" "$work/site2" >"$work/out2.txt" 2>"$work/err2.txt"; then
  echo "salt_site.py accepted a SOURCES folder without lion-pytorch" >&2
  exit 1
fi
[ "$(wc -l <"$work/err2.txt")" = 1 ] && grep -q "lucidrains+lion-pytorch" "$work/err2.txt"
[ ! -e "$work/site2" ] && [ ! -e "$work/site2.partial" ]
echo "salt_site_layout: ok"
