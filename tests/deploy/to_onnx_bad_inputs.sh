#!/usr/bin/env bash
# salt to_onnx on bad input: one line on stderr, a non-zero exit, no file written
# (neither network.onnx nor a temp file). Trains the zoo's tutorial model first.
# Usage: to_onnx_bad_inputs.sh SALT_BINARY WORK_DIR
set -euo pipefail
salt=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
bash "$here/../zoo/run_zoo_config.sh" "$salt" "$work" tutorial.yaml >"$work.train.log" 2>&1 ||
  { tail -20 "$work.train.log"; exit 1; }
run="$work/tutorial/logs/$(ls "$work/tutorial/logs")"
ckpt=$(ls "$run"/ckpts/*.ckpt | head -n 1)

expect_one_line() {  # expect_one_line WHAT PATTERN salt-args...
  local what=$1 pattern=$2
  shift 2
  local err rc=0
  err=$("$salt" to_onnx --force "$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" -eq 0 ]; then echo "FAIL $what: exit 0"; exit 1; fi
  if [ "$(printf '%s\n' "$err" | grep -vc '^info:')" -ne 1 ] || ! printf '%s' "$err" | grep -q "^salt: error: .*$pattern"; then
    echo "FAIL $what: expected one line matching '$pattern', got:"; printf '%s\n' "$err"; exit 1
  fi
  left=$(find "$run" "$work/lonely" -name '*onnx*' 2>/dev/null)
  if [ -n "$left" ]; then echo "FAIL $what: left $left"; exit 1; fi
  echo "ok   $what: $(printf '%s\n' "$err" | grep '^salt: error')"
}

mkdir -p "$work/lonely/ckpts"
# Alone, without config.yaml, without LightningCLI's hyper_parameters to rebuild it
# from and without the run config salt-cpp keeps (salt test's rule: CheckpointConfig).
/usr/bin/python3 -c 'import sys, torch; c = torch.load(sys.argv[1]); del c["hyper_parameters"], c["hparams_name"], c["salt_cpp"]["config"]; torch.save(c, sys.argv[2])' \
  "$ckpt" "$work/lonely/ckpts/$(basename "$ckpt")"
expect_one_line "checkpoint without a config" "to_onnx: no --config, no .*config.yaml and no config in .* pass --config" \
  --ckpt_path "$work/lonely/ckpts/$(basename "$ckpt")"
/usr/bin/python3 - "$run/config.yaml" "$work/other.yaml" <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
enc = c["model"]["model"]["init_args"]["encoder"]["init_args"]
enc["num_layers"] += 1
yaml.safe_dump(c, open(sys.argv[2], "w"), sort_keys=False)
PY
expect_one_line "config/checkpoint mismatch" "$(basename "$ckpt")" --ckpt_path "$ckpt" --config "$work/other.yaml"
expect_one_line "unknown task in --tasks" "no task 'nope' in the model" --ckpt_path "$ckpt" --tasks jets_classification nope
expect_one_line "malformed --combine_outputs" "--combine_outputs 'light,x\*pu'" --ckpt_path "$ckpt" --combine_outputs "light,x*pu"
expect_one_line "--combine_outputs of an unknown output" "no output 'pq'" --ckpt_path "$ckpt" --combine_outputs "light,pq"
expect_one_line "malformed --parameter" "'mass' is not NAME=NUMBER" --ckpt_path "$ckpt" --parameter mass
expect_one_line "--parameter of a model without parameters" "'mass' is not a parameter of the model .*none" --ckpt_path "$ckpt" --parameter mass=16
expect_one_line "bad --name" "must not contain" --ckpt_path "$ckpt" --name GN2_x
expect_one_line "--name with a newline" "must not hold control characters" --ckpt_path "$ckpt" --name "$(printf 'a\nb')"
expect_one_line "empty --output" "--output must not be empty" --ckpt_path "$ckpt" --output ""
expect_one_line "--object_name without a MaskFormer" "object_name needs a MaskFormer model" --ckpt_path "$ckpt" -mf hadron
expect_one_line "empty --object_name" "object_name must not be empty" --ckpt_path "$ckpt" --object_name ""
expect_one_line "unwritable output" "/proc/net.onnx.*cannot write" --ckpt_path "$ckpt" --output /proc/net.onnx
expect_one_line "output in a missing directory" "is not a writable directory" --ckpt_path "$ckpt" --output "$work/nowhere/net.onnx"
touch "$work/exists.onnx"
expect_one_line "existing output without --overwrite" "exists (pass --overwrite" --ckpt_path "$ckpt" --output "$work/exists.onnx"
# The command's own inputs are never an output, --overwrite or not.
before=$(md5sum <"$ckpt")
expect_one_line "the checkpoint as --output" "is the checkpoint being exported" --ckpt_path "$ckpt" --output "$ckpt" --overwrite
expect_one_line "the config as --output" "is the config being exported" --ckpt_path "$ckpt" --output "$run/config.yaml" --overwrite
[ "$(md5sum <"$ckpt")" = "$before" ] || { echo "FAIL the checkpoint changed"; exit 1; }
expect_one_line "missing checkpoint" "does not exist" --ckpt_path "$work/none.ckpt"
# A directory is said to be one (it was "does not exist"), with a checkpoint it holds as the example.
expect_one_line "a directory as --ckpt_path" \
  "to_onnx: --ckpt_path $run is a directory, not a checkpoint: give a checkpoint file (.ckpt), e.g. $run/ckpts/.*\.ckpt" \
  --ckpt_path "$run"
expect_one_line "missing config" "--config .*none.yaml does not exist" --ckpt_path "$ckpt" --config "$work/none.yaml"
# --require_check where ONNX Runtime is missing: refused, and the unchecked file removed.
mkdir -p "$work/no_ort"
rc=0
err=$(SALT_ORT_DIR="$work/no_ort" "$salt" to_onnx --force --ckpt_path "$ckpt" --require_check --output "$work/unchecked.onnx" \
      2>&1 >/dev/null) || rc=$?
if [ "$rc" -ne 2 ] || [ "$(printf '%s\n' "$err" | grep -vc '^info:')" -ne 1 ] ||
   ! printf '%s' "$err" | grep -q "^salt: error: to_onnx: cannot check the export in ONNX Runtime: onnxruntime-node is not installed"; then
  echo "FAIL --require_check without ONNX Runtime (exit $rc):"; printf '%s\n' "$err"; exit 1
fi
[ -z "$(find "$work" -maxdepth 1 -name '*unchecked.onnx*')" ] || { echo "FAIL the unchecked export was left"; exit 1; }
echo "ok   --require_check without ONNX Runtime: $(printf '%s\n' "$err" | grep '^salt: error')"
# An explicit --test_file that is no HDF5 file: refused up front, also without ONNX Runtime to read it.
echo "not hdf5" > "$work/text.h5"
rc=0
err=$(SALT_ORT_DIR="$work/no_ort" "$salt" to_onnx --force --ckpt_path "$ckpt" --test_file "$work/text.h5" \
      --output "$work/text_checked.onnx" 2>&1 >/dev/null) || rc=$?
if [ "$rc" -ne 1 ] || ! printf '%s' "$err" | grep -q "^salt: error: Not an HDF5 file: $work/text.h5"; then
  echo "FAIL --test_file that is not HDF5 (exit $rc):"; printf '%s\n' "$err"; exit 1
fi
[ ! -e "$work/text_checked.onnx" ] || { echo "FAIL an export was written"; exit 1; }
echo "ok   --test_file that is not HDF5: $(printf '%s\n' "$err" | grep '^salt: error')"
# get_onnx_metadata -k of a key the model lacks (on a good export).
"$salt" to_onnx --force --ckpt_path "$ckpt" --output "$work/good.onnx" >/dev/null 2>&1
rc=0
err=$("$salt" get_onnx_metadata "$work/good.onnx" -k no_such_key 2>&1 >/dev/null) || rc=$?
[ "$rc" -eq 1 ] && [ "$err" = "salt: error: $work/good.onnx: no metadata key 'no_such_key'" ] ||
  { echo "FAIL get_onnx_metadata -k no_such_key (exit $rc): $err"; exit 1; }
echo "ok   get_onnx_metadata of a missing key: $err"

# A test file without jets: one line naming it (it was LibTorch's argmax message).
/usr/bin/python3 - "$work/tutorial/data/pp_output_test_ttbar.h5" "$work/no_jets.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1]) as src, h5py.File(sys.argv[2], "w") as dst:
    dst.attrs.update(src.attrs)
    for name, ds in src.items():
        dst.create_dataset(name, data=ds[:0]).attrs.update(ds.attrs)
PY
expect_one_line "a test file without jets" "to_onnx: the test file $work/no_jets.h5 holds no jets (0 rows)" \
  --ckpt_path "$ckpt" --test_file "$work/no_jets.h5" --output "$work/no_jets.onnx"
[ -z "$(find "$work" -maxdepth 1 -name '*no_jets.onnx*')" ] || { echo "FAIL a test file without jets: a file was left"; exit 1; }

# A runner that answers garbage (a real Node script, found as salt finds its runner:
# <share>/scripts/ort_run.js, here through SALT_SHARE_DIR): one line naming the runner,
# quoting at most 200 characters of the answer (it was `internal error: yaml-cpp ...`).
share=$(cd "$(dirname "$salt")/../share/salt" && pwd)
fake="$work/fake_share"
mkdir -p "$fake/scripts"
for entry in configs ort source; do ln -sfn "$share/$entry" "$fake/$entry"; done
runner_answers() {  # runner_answers WHAT PATTERN ANSWER: the fake runner writes ANSWER as its outputs file
  local what=$1 pattern=$2
  printf 'require("fs").writeFileSync(process.argv[4], %s);\n' "$3" >"$fake/scripts/ort_run.js"
  local err rc=0
  err=$(SALT_SHARE_DIR="$fake" "$salt" to_onnx --force --ckpt_path "$ckpt" --output "$work/garbage.onnx" 2>&1 >/dev/null) ||
    rc=$?
  local line
  line=$(printf '%s\n' "$err" | grep -v '^info:' || true)
  if [ "$rc" -ne 1 ] || [ "$(printf '%s\n' "$line" | wc -l)" -ne 1 ] ||
     ! printf '%s' "$line" | grep -q "^salt: error: the ONNX Runtime runner $fake/scripts/ort_run.js gave an answer salt cannot read ($pattern"; then
    echo "FAIL runner answering $what (exit $rc):"; printf '%s\n' "$err" | cut -c1-400; exit 1
  fi
  [ "${#line}" -lt 500 ] || { echo "FAIL runner answering $what: a line of ${#line} characters"; exit 1; }
  [ -z "$(find "$work" -maxdepth 1 -name '*garbage.onnx*')" ] || { echo "FAIL runner answering $what: a file was left"; exit 1; }
  echo "ok   runner answering $what: $line"
}
runner_answers "a page of text" "not a JSON object" '"<html>" + "x".repeat(100000)'
runner_answers "a number for the jets" "no list of jets" 'JSON.stringify({jets: 5})'
runner_answers "a word for a value" "a value of 'GN2_pb' that is not a number" \
  'JSON.stringify({jets: [{GN2_pb: {dims: [], data: ["lots"]}}]})'
runner_answers "half a file" "not JSON: " '"{\"jets\": [{\"GN2_pb\": {\"dims\": [], \"data\": [0.1"'

# Stopped while ONNX Runtime checks: SIGTERM/SIGINT stop the Node child, remove the
# temp model and the check folder, say so in one line and exit 128+N; after SIGKILL
# the child dies with salt (PR_SET_PDEATHSIG) and the next to_onnx into the same
# place removes what was left. A larger test file keeps the check running long enough.
/usr/bin/python3 - "$work/tutorial/data/pp_output_test_ttbar.h5" "$work/many_jets.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1]) as src, h5py.File(sys.argv[2], "w") as dst:
    dst.attrs.update(src.attrs)
    for name, ds in src.items():
        dst.create_dataset(name, data=np.concatenate([ds[:]] * 40)).attrs.update(ds.attrs)
PY
runner_child_of() {  # runner_child_of PID: the pid of the `node .../ort_run.js` whose parent is PID, or nothing
  local stat line fields dir  # (read from /proc; `node --version`, run first, is not the check)
  for stat in /proc/[0-9]*/stat; do
    { read -r line <"$stat"; } 2>/dev/null || continue
    case $line in *" (node) "*) ;; *) continue ;; esac
    fields=(${line##*) })  # state, ppid, ...
    dir=${stat%/stat}
    if [ "${fields[1]}" = "$1" ] && grep -qa ort_run.js "$dir/cmdline" 2>/dev/null; then echo "${dir#/proc/}"; return 0; fi
  done
  return 0
}
running() {  # running PID: the process exists and is no zombie (a killed orphan waits to be reaped by its new parent)
  local line fields
  { read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
  fields=(${line##*) })
  [ "${fields[0]}" != Z ]
}
start_check() {  # start_check OUTPUT: a to_onnx in the background; sets pid and child once Node runs
  "$salt" to_onnx --force --ckpt_path "$ckpt" --test_file "$work/many_jets.h5" --check_jets 100000 --output "$1" \
    >/dev/null 2>"$1.err" &
  pid=$! child=""
  for _ in $(seq 1200); do
    child=$(runner_child_of "$pid")
    [ -n "$child" ] && return
    sleep 0.05
  done
  echo "FAIL no ONNX Runtime runner (node ort_run.js) child of salt to_onnx within a minute:"; cat "$1.err"; exit 1
}
for sig in TERM INT; do
  out="$work/stopped_$sig.onnx"
  start_check "$out"
  kill -s "$sig" "$pid"
  rc=0
  wait "$pid" || rc=$?
  code=$((128 + $(kill -l "$sig")))
  err=$(grep -v '^info:' "$out.err" || true)
  if [ "$rc" -ne "$code" ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] ||
     ! printf '%s' "$err" | grep -q "^salt: stopped by signal $((code - 128)) "; then
    echo "FAIL SIG$sig during the check (exit $rc, expected $code):"; cat "$out.err"; exit 1
  fi
  if running "$child"; then echo "FAIL SIG$sig: the node child $child still runs"; exit 1; fi
  left=$(find "$work" -maxdepth 1 -name "*stopped_$sig.onnx*" ! -name '*.err')
  [ -z "$left" ] || { echo "FAIL SIG$sig: left $left"; exit 1; }
  echo "ok   SIG$sig during the ONNX Runtime check: $err"
done
out="$work/killed.onnx"
start_check "$out"
kill -s KILL "$pid"
{ wait "$pid"; } 2>/dev/null || true  # bash's "Killed" notice is expected here
for _ in $(seq 20); do running "$child" || break; sleep 0.05; done  # the kernel kills it at once
if running "$child"; then echo "FAIL SIGKILL: the node child $child outlived salt"; exit 1; fi
[ -n "$(find "$work" -maxdepth 1 -name ".killed.onnx.tmp.$pid.*")" ] && [ -d "$work/.killed.onnx.check.$pid" ] ||
  { echo "FAIL SIGKILL: expected the temp model and check folder of $pid, found:"; ls -A "$work"; exit 1; }
"$salt" to_onnx --force --ckpt_path "$ckpt" --output "$out" 2>"$out.err" >/dev/null ||
  { echo "FAIL the export after SIGKILL:"; cat "$out.err"; exit 1; }
grep -q "removed 2 temp file(s) and check folder(s) left next to $out by killed processes" "$out.err" ||
  { echo "FAIL the export after SIGKILL did not say what it removed:"; cat "$out.err"; exit 1; }
left=$(find "$work" -maxdepth 1 -name ".killed.onnx*")
[ -z "$left" ] && [ -f "$out" ] || { echo "FAIL after SIGKILL and a new export: left $left"; exit 1; }
echo "ok   SIGKILL during the check: the node child died with salt, the next export removed the temp model and check folder"
echo "to_onnx: every bad input refused in one line, nothing written"
