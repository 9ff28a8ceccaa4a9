#!/usr/bin/env bash
# The zoo test of one salt config (tests/fixtures/zoo/zoo.txt): our equivalent of
# one of salt's configs composes, `salt toydata --config` writes data carrying its
# variables and labels, one small epoch fits on the CPU and `salt test` writes the
# prediction file. Only data paths and CPU sizes are overridden; each config trains at
# its own precision (16-mixed is bf16-mixed on a CPU, as in salt).
# With SALT_ZOO_EXPORT=1 the tested checkpoint is also exported with `salt to_onnx`
# (extra flags in SALT_ZOO_EXPORT_ARGS), checked in ONNX Runtime on the test jets
# (SALT_ZOO_NUM_TEST) plus 0-, 1- and 12-constituent jets, and its metadata must parse as JSON. With
# SALT_ZOO_EXPORT=refuse the export must fail in one line and write nothing.
# Usage: run_zoo_config.sh SALT_BINARY WORK_DIR CONFIG [OVERLAY...]   (paths relative to the zoo folder)
set -euo pipefail
salt=$1 work=$2
shift 2
zoo=$(cd "$(dirname "$0")/../fixtures/zoo" && pwd)
configs=()
for c in "$@"; do configs+=(-c "$zoo/$c"); done
name=$(basename "${!#}" .yaml)
dir="$work/$name"
rm -rf "$dir"
mkdir -p "$dir"
data="$dir/data"

"$salt" fit "${configs[@]}" --print_config >"$dir/composed.yaml"
# CPU sizes: at most 12 constituent slots (Xbb configs keep 100 tracks and flows),
# as one more overlay for toydata and fit.
inputs=$(awk '/^  num_inputs:$/ {on=1; next} on && /^    [A-Za-z_0-9]+: / {sub(":", "", $1); print $1; next} {on=0}' "$dir/composed.yaml")
if [ -n "$inputs" ]; then
  { echo "data:"; echo "  num_inputs:"; for i in $inputs; do echo "    $i: 12"; done; } >"$dir/sizes.yaml"
  configs+=(-c "$dir/sizes.yaml")
fi
"$salt" toydata "${configs[@]}" -o "$data" --num_train 80 --num_val 60 --num_test "${SALT_ZOO_NUM_TEST:-60}" --slots 12
paths=(--data.train_file "$data/pp_output_train.h5" --data.val_file "$data/pp_output_val.h5"
       --data.test_file "$data/pp_output_test_ttbar.h5" --data.norm_dict "$data/norm_dict.yaml")
if grep -q "^  class_dict: [^n]" "$dir/composed.yaml"; then paths+=(--data.class_dict "$data/class_dict.yaml"); fi
cpu=(--data.batch_size 40 --data.num_workers 0 --data.num_train -1 --data.num_val -1 --data.num_test -1
     --trainer.max_epochs 1 --trainer.accelerator cpu --trainer.devices 1 --trainer.num_nodes 1
     --trainer.default_root_dir "$dir/logs")
# muP configs: the base shapes first (salt's main_muP.py), into the test's directory.
if grep -q "^  mup_config:$" "$dir/composed.yaml"; then
  paths+=(--model.mup_config.shape_path "$dir/shape_mup")
  "$salt" mup "${configs[@]}" "${paths[@]}" "${cpu[@]}" 2>&1 | tee "$dir/mup.log"
  grep -q "^embed\|^init_nets" "$dir/shape_mup/storeshapes"
  echo "zoo: muP base shapes in $dir/shape_mup/storeshapes"
fi
"$salt" fit "${configs[@]}" "${paths[@]}" "${cpu[@]}" --force -ls zoo 2>&1 | tee "$dir/fit.log"
if [ -n "${SALT_ZOO_EXPECT_PARAMS:-}" ]; then
  grep -q "Trainable params ($SALT_ZOO_EXPECT_PARAMS)" "$dir/fit.log" ||
    { echo "zoo: expected $SALT_ZOO_EXPECT_PARAMS trainable parameters, got: $(grep 'Trainable params' "$dir/fit.log")"; exit 1; }
  echo "zoo: $SALT_ZOO_EXPECT_PARAMS trainable parameters, as salt's formulas give"
fi
run="$dir/logs/$(ls "$dir/logs")"
"$salt" test --config "$run/config.yaml" --data.num_workers 0 --trainer.accelerator cpu --trainer.devices 1
ls "$run"/ckpts/*__test_ttbar.h5 >/dev/null
echo "zoo: $* fit and tested in $run"
# SALT_ZOO_EXPECT_FIELDS: the global object's last fields, comma-separated, in the
# order salt writes them (task by task, in config order).
if [ -n "${SALT_ZOO_EXPECT_FIELDS:-}" ]; then
  /usr/bin/python3 - "$(ls "$run"/ckpts/*__test_ttbar.h5)" "$SALT_ZOO_EXPECT_FIELDS" <<'PY'
import sys, h5py
names = list(h5py.File(sys.argv[1], "r")["jets"].dtype.names)
want = sys.argv[2].split(",")
assert names[-len(want):] == want, (names, want)
print("zoo: prediction fields in salt's order:", ", ".join(want))
PY
fi
# SALT_ZOO_SALT_LAYOUT=1: the tested checkpoint rewritten as salt writes it (Python's
# torch.save of Lightning's dict: tests/zoo/as_salt_writes_it.py), in a run directory
# whose config.yaml has LightningCLI's top-level keys: `salt test` on it must give
# the same prediction file, bit for bit.
if [ "${SALT_ZOO_SALT_LAYOUT:-0}" = 1 ]; then
  # the run's config.yaml as salt's CLI saves it (what salt's classes accept)
  /usr/bin/python3 - "$run/config.yaml" <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
m = c["model"]
args = m["model"]["init_args"]
assert "name" not in m and "global_object" not in m, "link targets"
assert all(k in c and c[k] is None for k in ("optimizer", "lr_scheduler")), "LightningCLI's top-level keys"
assert sorted(m["norm_config"]) == ["global_object", "input_map", "norm_dict", "variables"], m["norm_config"]
enc = args.get("encoder") or {}
if str(enc.get("class_path", "")).endswith("Transformer"):
    assert "depth" not in enc["init_args"], "Transformer depth"
for net in args.get("init_nets") or []:
    assert net["dense_config"].get("input_size", 0) is not None and net["variables"] and net["global_object"], net
md = (args.get("mask_decoder") or {}).get("init_args") or {}
assert "class_weights" not in (md.get("loss_config") or {}), "class_weights inside loss_config"
print("zoo: config.yaml as salt's CLI saves it")
PY
  ckpt=$(ls "$run"/ckpts/*.ckpt | head -n 1)
  theirs="$dir/salt_run"
  mkdir -p "$theirs/ckpts"
  cp "$run/config.yaml" "$theirs/config.yaml"  # it has LightningCLI's top-level keys already
  /usr/bin/python3 "$(dirname "$0")/as_salt_writes_it.py" "$ckpt" "$theirs/ckpts/$(basename "$ckpt")" 2
  "$salt" test --config "$theirs/config.yaml" --ckpt_path "$theirs/ckpts/$(basename "$ckpt")" --data.num_workers 0 \
    --trainer.accelerator cpu --trainer.devices 1
  ours_h5=$(ls "$run"/ckpts/*__test_ttbar.h5)
  /usr/bin/python3 - "$ours_h5" "$theirs/ckpts/$(basename "$ours_h5")" <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
assert sorted(a) == sorted(b), (list(a), list(b))
for name in a:
    x, y = a[name][:], b[name][:]
    assert x.dtype == y.dtype and x.shape == y.shape, name
    for f in x.dtype.names:
        assert np.array_equal(x[f], y[f], equal_nan=x.dtype[f].kind == "f"), (name, f)
print("zoo: the checkpoint laid out as salt writes it gives the same predictions:", ", ".join(sorted(a)))
PY
fi
if [ "${SALT_ZOO_EXPORT:-0}" = refuse ]; then
  ckpt=$(ls "$run"/ckpts/*.ckpt | head -n 1)
  if "$salt" to_onnx --ckpt_path "$ckpt" --force 2>"$dir/export.err"; then echo "zoo: to_onnx should refuse $*"; exit 1; fi
  # one error line (info lines, e.g. which config.yaml it read, may come before it)
  [ "$(grep -vc '^info:' "$dir/export.err")" -eq 1 ] && grep -q "^salt: error: to_onnx: " "$dir/export.err" ||
    { echo "zoo: to_onnx did not refuse in one line:"; cat "$dir/export.err"; exit 1; }
  left=$(find "$run" -name '*onnx*')
  if [ -n "$left" ]; then echo "zoo: a refused export left $left"; exit 1; fi
  echo "zoo: export refused as expected: $(cat "$dir/export.err")"
elif [ "${SALT_ZOO_EXPORT:-0}" = 1 ]; then
  ckpt=$(ls "$run"/ckpts/*.ckpt | head -n 1)
  # shellcheck disable=SC2086
  jets=${SALT_ZOO_NUM_TEST:-60}
  "$salt" to_onnx --ckpt_path "$ckpt" --require_check --force --check_jets "$jets" ${SALT_ZOO_EXPORT_ARGS:-} 2>&1 | tee "$dir/export.log"
  grep -q "ONNX Runtime vs salt-cpp on $((jets + 3)) test jets" "$dir/export.log"
  "$salt" get_onnx_metadata "$run/network.onnx" >"$dir/metadata.txt"
  # SALT_ZOO_EXPECT_PARAMETERS: the parameter values the graph fixes (JSON), for parameterised models.
  tail -n +2 "$dir/metadata.txt" | /usr/bin/python3 -c 'import json, os, sys; m = json.load(sys.stdin); assert m["inputs"] and m["output_names"] and m["model_name"], m.keys(); want = json.loads(os.environ.get("SALT_ZOO_EXPECT_PARAMETERS", "null")); assert m.get("parameters") == want, (m.get("parameters"), want); print("zoo: metadata of", m["model_name"], "outputs", m["output_names"], "parameters", want)'
fi
