#!/usr/bin/env bash
# scripts/salt_roundtrip.sh on bad arguments: one line `salt_roundtrip.sh: error: ...`
# naming the argument, exit 2, and nothing under the work folder touched (the user's
# files there stay, nothing is made). It deletes only a folder it made itself: a
# rerun replaces WORK_DIR/<name> when it carries the script's mark, and refuses any
# other folder, link or file of that name.
# No salt is installed here: where a check needs SALT_PYTHON to find salt, a stub
# package `salt` on PYTHONPATH stands in (the checks only locate it), and
# SALT_BIN=/bin/false ends the run at its first salt-cpp command, right after the
# script has made its folder.
# Usage: salt_roundtrip_bad_inputs.sh WORK_DIR
set -euo pipefail
work=$1
script=$(cd "$(dirname "$0")/../.." && pwd)/scripts/salt_roundtrip.sh
rm -rf "$work" && mkdir -p "$work/stub/salt" "$work/user"
: >"$work/stub/salt/__init__.py"
echo "the user's notes" >"$work/user/notes.txt"
mkdir "$work/user/GN2"  # the user's own folder, named as a config
echo "the user's results" >"$work/user/GN2/results.txt"
mkdir "$work/user/links" && ln -s "$work/user/GN2" "$work/user/links/GN2"
mkdir "$work/user/files" && echo "a file named as a config" >"$work/user/files/GN2"
echo "a file, not a folder" >"$work/user/a_file"
export SALT_PYTHON=/usr/bin/python3 PYTHONPATH=$work/stub SALT_BIN=/bin/false
tree() { find "$work/user" -printf '%p %y %s\n' | sort; }
before=$(tree)

failed=0
refused() {  # refused WHAT PATTERN args...: exit 2, one line matching PATTERN, $work/user untouched
  local what=$1 pattern=$2
  shift 2
  local rc=0 err
  err=$(bash "$script" "$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] ||
     ! printf '%s\n' "$err" | grep -q "^salt_roundtrip.sh: error: .*$pattern"; then
    echo "FAIL $what: expected exit 2 and one line 'salt_roundtrip.sh: error: ...$pattern', got exit $rc:"
    printf '%s\n' "$err" | head -n 5
    failed=1
  elif [ "$(tree)" != "$before" ]; then
    echo "FAIL $what: the user's folder changed:"
    diff <(echo "$before") <(tree) || true
    failed=1
  else
    echo "ok   $what: $err"
  fi
}

cd "$work/user"
refused "no arguments" "usage: SALT_PYTHON=python3 salt_roundtrip.sh WORK_DIR CONFIG"
refused "no CONFIG" "usage: SALT_PYTHON=python3 salt_roundtrip.sh WORK_DIR CONFIG" "$work/user"
refused "an empty CONFIG (it deleted WORK_DIR)" "a CONFIG is empty" "$work/user" ''
refused "an empty OVERLAY" "a CONFIG is empty" "$work/user" GN2/GN2.yaml ''
refused "an empty WORK_DIR" "WORK_DIR is empty" '' GN2/GN2.yaml
refused "WORK_DIR /" "WORK_DIR '/' is the root folder" / GN2/GN2.yaml
refused "WORK_DIR /.." "WORK_DIR '/..' is the root folder" /.. GN2/GN2.yaml
refused "WORK_DIR a file" "WORK_DIR '$work/user/a_file' is not a folder" "$work/user/a_file" GN2/GN2.yaml
refused "CONFIG .." "CONFIG '..' is not a file in tests/fixtures/zoo" "$work/user/GN2" ..
refused "CONFIG ." "CONFIG '.' is not a file in tests/fixtures/zoo" "$work/user/GN2" .
refused "CONFIG a folder" "CONFIG 'GN2' is not a file in tests/fixtures/zoo" "$work/user" GN2
refused "CONFIG missing" "CONFIG 'GN2/nope.yaml' is not a file in tests/fixtures/zoo" "$work/user" GN2/nope.yaml
refused "CONFIG with a newline" "CONFIG 'GN2?x.yaml' is not a file" "$work/user" "GN2"$'\n'"x.yaml"
long=$(printf 'x%.0s' $(seq 1000))
refused "a 1000-character CONFIG" "CONFIG 'xxxx*\.\.\.' is not a file" "$work/user" "$long"
if [ "$failed" -eq 0 ] && [ "$(bash "$script" "$work/user" "$long" 2>&1 | wc -c)" -gt 400 ]; then
  echo "FAIL a 1000-character CONFIG: echoed whole"; failed=1
fi
SALT_PYTHON='' refused "SALT_PYTHON unset" "SALT_PYTHON is not set" "$work/user" GN2/GN2.yaml
SALT_PYTHON=no-such-python3 refused "SALT_PYTHON not a command" "SALT_PYTHON 'no-such-python3' is not a command" \
  "$work/user" GN2/GN2.yaml
PYTHONPATH='' refused "SALT_PYTHON without salt" "SALT_PYTHON '/usr/bin/python3' cannot import salt" "$work/user" GN2/GN2.yaml
SALT_BIN=$work/no-salt refused "SALT_BIN missing" "SALT_BIN '$work/no-salt' is not an executable file" "$work/user" GN2/GN2.yaml
refused "the user's folder WORK_DIR/GN2 (it deleted it)" "'$work/user/GN2' exists and was not made by this script" \
  "$work/user" GN2/GN2.yaml
refused "WORK_DIR/GN2 a link to the user's folder" "'$work/user/links/GN2' is a symbolic link" "$work/user/links" GN2/GN2.yaml
refused "WORK_DIR/GN2 a file" "'$work/user/files/GN2' is not a folder" "$work/user/files" GN2/GN2.yaml

# Its own folder of an earlier run is replaced, the rest of WORK_DIR kept; a new
# WORK_DIR is made. (/bin/false as salt-cpp ends each run with exit 1.)
mkdir -p "$work/runs"
echo "the user's file next to the runs" >"$work/runs/keep.txt"
for run in first second; do
  rc=0
  bash "$script" "$work/runs" GN2/GN2.yaml >/dev/null 2>&1 || rc=$?
  if [ "$rc" -ne 1 ] || [ ! -f "$work/runs/GN2/.salt_roundtrip" ] || [ -e "$work/runs/GN2/from_first_run" ] ||
     [ ! -f "$work/runs/keep.txt" ]; then
    echo "FAIL $run run: expected exit 1 at /bin/false, a marked $work/runs/GN2 without from_first_run, keep.txt kept; got exit $rc:"
    ls -la "$work/runs" "$work/runs/GN2" 2>&1
    failed=1
  else
    echo "ok   $run run: made its marked folder $work/runs/GN2 (exit $rc at /bin/false)"
  fi
  : >"$work/runs/GN2/from_first_run"
done
exit "$failed"
