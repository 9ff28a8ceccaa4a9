#!/usr/bin/env bash
# Two-way check against salt itself, on any machine where salt is installed: one
# config of the zoo (tests/fixtures/zoo) trained briefly on toy data by each
# trainer, and each run opened by the other.
#   salt-cpp -> salt: salt-cpp fits; salt's own `salt test` reads the run's
#     config.yaml and checkpoint, and both prediction files must agree; salt's
#     ModelWrapper.load_from_checkpoint (what salt's to_onnx calls) rebuilds the model.
#   salt -> salt-cpp: salt fits from the config.yaml of salt-cpp's run; salt-cpp's `test`,
#     `validate` and `to_onnx` open salt's run directory; the predictions must
#     agree with salt's own `salt test`.
#   Continuing: salt's `salt fit --ckpt_path` resumes salt-cpp's epoch-0 checkpoint
#     (weights, optimizer moments, schedule) and salt-cpp resumes salt's.
# Both train two epochs in precision 32 on the CPU. salt runs without a logger and without
# LearningRateMonitor: its fit otherwise needs Comet (its metadata writer reads
# the Comet experiment's URL).
#
# Usage: SALT_PYTHON=/path/to/python3 scripts/salt_roundtrip.sh WORK_DIR CONFIG [OVERLAY...]
#   SALT_PYTHON  a python3 where `import salt` works (salt's `salt` entry point is
#                `python -m salt.main`)
#   SALT_BIN     salt-cpp's binary (default build/app/salt)
#   CONFIG...    paths relative to tests/fixtures/zoo, as in zoo.txt
# Everything goes into WORK_DIR/<name of the last CONFIG>, a folder this script makes
# and marks as its own (a file .salt_roundtrip in it); a rerun replaces only a folder
# so marked. Any other folder of that name, a link or a file there is refused, as is
# a bad argument: one line `salt_roundtrip.sh: error: ...` before anything is touched.
# Prints one `roundtrip:` line per check; exits non-zero at the first command that
# fails, or at the end when the prediction files differed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zoo=$root/tests/fixtures/zoo
marker=.salt_roundtrip
usage="usage: SALT_PYTHON=python3 $(basename "$0") WORK_DIR CONFIG [OVERLAY...]"

refuse() {  # one line on stderr, exit 2: a bad argument, nothing touched yet
  echo "salt_roundtrip.sh: error: $*" >&2
  exit 2
}
shown() {  # an argument as the messages quote it: control characters as '?', at most 200 characters
  local s=${1//[[:cntrl:]]/?}
  [ ${#s} -le 200 ] || s="${s:0:200}..."
  printf "'%s'" "$s"
}
[ $# -ge 2 ] || refuse "$usage"
work=$1
shift
[ -n "$work" ] || refuse "WORK_DIR is empty ($usage)"
[ ! -e "$work" ] || [ -d "$work" ] || refuse "WORK_DIR $(shown "$work") is not a folder"
case $work in -*) work=./$work ;; esac  # never read as an option by mkdir or rm
[ "$(realpath -m -- "$work")" != / ] || refuse "WORK_DIR $(shown "$work") is the root folder; give a folder for this script's runs"
for c in "$@"; do
  [ -n "$c" ] || refuse "a CONFIG is empty: give paths relative to tests/fixtures/zoo, as in its zoo.txt"
  [ -f "$zoo/$c" ] || refuse "CONFIG $(shown "$c") is not a file in tests/fixtures/zoo (its zoo.txt lists them)"
done
py=${SALT_PYTHON:-}
[ -n "$py" ] || refuse "SALT_PYTHON is not set: set it to a python3 that has salt installed"
command -v -- "$py" >/dev/null || refuse "SALT_PYTHON $(shown "$py") is not a command"
# find_spec only locates the package: seconds sooner than importing salt and Lightning
"$py" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("salt") is None)' 2>/dev/null ||
  refuse "SALT_PYTHON $(shown "$py") cannot import salt"
cpp=${SALT_BIN:-$root/build/app/salt}
{ [ -f "$cpp" ] && [ -x "$cpp" ]; } ||
  refuse "SALT_BIN $(shown "$cpp") is not an executable file (scripts/build.sh salt builds build/app/salt)"
configs=()
for c in "$@"; do configs+=(-c "$zoo/$c"); done
name=$(basename -- "${!#}" .yaml)
dir=$work/$name
if [ -L "$dir" ]; then
  refuse "$(shown "$dir") is a symbolic link: move it away or choose another WORK_DIR"
elif [ -e "$dir" ] && [ ! -d "$dir" ]; then
  refuse "$(shown "$dir") is not a folder: move it away or choose another WORK_DIR"
elif [ -d "$dir" ] && [ ! -f "$dir/$marker" ]; then
  refuse "$(shown "$dir") exists and was not made by this script (no $marker in it): move it away or choose another WORK_DIR"
fi
rm -rf "$dir"  # absent, or this script's own folder of an earlier run
mkdir -p "$dir"
echo "made by scripts/salt_roundtrip.sh: a rerun deletes this folder" >"$dir/$marker"
data=$dir/data
salt_py() { COMET_OFFLINE_DIRECTORY=$dir/comet "$py" -m salt.main "$@"; }
ckpt_of() { find "$1" -name '*.ckpt' | sort | tail -n 1; }
first_ckpt_of() { find "$1" -name '*.ckpt' | sort | head -n 1; }
predictions_of() { find "$1" -name '*__test_*.h5' | head -n 1; }
differ=0  # a prediction file that differs is reported, the other checks still run

# toy data carrying the config's variables, at most 12 constituent slots
"$cpp" fit "${configs[@]}" --print_config >"$dir/composed.yaml"
inputs=$(awk '/^  num_inputs:$/ {on=1; next} on && /^    [A-Za-z_0-9]+: / {sub(":", "", $1); print $1; next} {on=0}' "$dir/composed.yaml")
if [ -n "$inputs" ]; then
  { echo "data:"; echo "  num_inputs:"; for i in $inputs; do echo "    $i: 12"; done; } >"$dir/sizes.yaml"
  "$cpp" fit "${configs[@]}" -c "$dir/sizes.yaml" --print_config >"$dir/composed.yaml"
fi
"$cpp" toydata -c "$dir/composed.yaml" -o "$data" --num_train 400 --num_val 200 --num_test 200 --slots 12 >/dev/null
paths=(--data.train_file "$data/pp_output_train.h5" --data.val_file "$data/pp_output_val.h5"
       --data.test_file "$data/pp_output_test_ttbar.h5" --data.norm_dict "$data/norm_dict.yaml")
if grep -q "^  class_dict: [^n]" "$dir/composed.yaml"; then paths+=(--data.class_dict "$data/class_dict.yaml"); fi
cpu=(--data.batch_size 100 --data.num_workers 0 --data.num_train -1 --data.num_val -1 --data.num_test -1
     --trainer.max_epochs 2 --trainer.accelerator cpu --trainer.devices 1 --trainer.precision 32)

# --- salt-cpp -> salt ---
"$cpp" fit -c "$dir/composed.yaml" "${paths[@]}" "${cpu[@]}" --trainer.default_root_dir "$dir/cpp" --force \
  >"$dir/cpp_fit.log" 2>&1 || { tail -n 5 "$dir/cpp_fit.log"; exit 1; }
run=$(dirname "$(dirname "$(ckpt_of "$dir/cpp")")")
"$cpp" test --ckpt_path "$(ckpt_of "$run")" --force >"$dir/cpp_test.log" 2>&1 || { tail -n 5 "$dir/cpp_test.log"; exit 1; }
cp -r "$run" "$dir/cpp_in_salt"
rm -f "$dir"/cpp_in_salt/ckpts/*.h5
salt_py test -c "$dir/cpp_in_salt/config.yaml" --ckpt_path "$(ckpt_of "$dir/cpp_in_salt")" \
  >"$dir/salt_test_of_cpp.log" 2>&1 || { tail -n 15 "$dir/salt_test_of_cpp.log"; exit 1; }
echo "roundtrip: $name: salt's 'salt test' opened salt-cpp's run"
"$py" "$root/scripts/compare_predictions.py" "$(predictions_of "$run")" "$(predictions_of "$dir/cpp_in_salt")" |
  sed "s/^/roundtrip: $name: salt-cpp's run, salt-cpp vs salt: /" || differ=1

# salt's ModelWrapper.load_from_checkpoint, as salt's to_onnx calls it (the config's
# model section as keyword arguments), and from the checkpoint's hyper_parameters alone
"$py" - "$(ckpt_of "$dir/cpp_in_salt")" "$dir/cpp_in_salt/config.yaml" <<'PY' | sed "s/^/roundtrip: $name: /"
import sys, torch, yaml
import salt.utils.cli  # noqa: F401  salt's Tensor <-> list type for jsonargparse, as its CLI registers it
from salt.modelwrapper import ModelWrapper
ckpt, config = sys.argv[1], yaml.safe_load(open(sys.argv[2]))
saved = torch.load(ckpt, weights_only=True)["state_dict"]
for how, kwargs in (("with config.yaml's model section", config["model"]), ("from hyper_parameters alone", {})):
    model = ModelWrapper.load_from_checkpoint(ckpt, map_location="cpu", weights_only=False, **kwargs)
    state = model.state_dict()
    assert sorted(state) == sorted(saved), set(state) ^ set(saved)
    diff = max((state[k].float() - saved[k].float()).abs().max().item() for k in saved)
    assert diff == 0, diff
    print(f"salt's ModelWrapper.load_from_checkpoint {how}: {len(saved)} tensors, equal")
PY

# --- salt -> salt-cpp (and salt continuing salt-cpp's run) ---
# salt trains from the config.yaml salt-cpp's run saved (--print_config also lists
# salt-cpp's own keys, which salt's CLI refuses; the run's config.yaml leaves them out)
"$py" - "$run/config.yaml" "$dir/for_salt.yaml" "$dir/for_salt_resume.yaml" <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
c["trainer"]["logger"] = False
c["trainer"]["callbacks"] = [cb for cb in c["trainer"]["callbacks"] or [] if "LearningRateMonitor" not in cb["class_path"]]
yaml.safe_dump(c, open(sys.argv[3], "w"), sort_keys=False)  # resuming keeps the baked weights
# salt's fresh fit computes use_class_dict's loss weights itself and refuses a config
# that already has them (its resume needs them): the resolved config.yaml of a run
# (salt's own too) starts a new fit only without them.
tasks = ((c["model"]["model"]["init_args"].get("tasks") or {}).get("init_args") or {}).get("modules") or []
for t in tasks:
    if t["init_args"].get("use_class_dict"):
        t["init_args"]["loss"].setdefault("init_args", {})["weight"] = None
yaml.safe_dump(c, open(sys.argv[2], "w"), sort_keys=False)
PY
salt_py fit -c "$dir/for_salt_resume.yaml" --ckpt_path "$(first_ckpt_of "$run")" "${paths[@]}" "${cpu[@]}" \
  --trainer.default_root_dir "$dir/salt_resumed" --force >"$dir/salt_resume.log" 2>&1 ||
  { tail -n 15 "$dir/salt_resume.log"; exit 1; }
echo "roundtrip: $name: salt's 'salt fit --ckpt_path' continued salt-cpp's $(basename "$(first_ckpt_of "$run")") to $(basename "$(ckpt_of "$dir/salt_resumed")")"
salt_py fit -c "$dir/for_salt.yaml" "${paths[@]}" "${cpu[@]}" --trainer.default_root_dir "$dir/salt" --force \
  >"$dir/salt_fit.log" 2>&1 || { tail -n 15 "$dir/salt_fit.log"; exit 1; }
theirs=$(dirname "$(dirname "$(ckpt_of "$dir/salt")")")
cp -r "$theirs" "$dir/salt_in_cpp"
salt_py test -c "$theirs/config.yaml" --ckpt_path "$(ckpt_of "$theirs")" \
  >"$dir/salt_test.log" 2>&1 || { tail -n 15 "$dir/salt_test.log"; exit 1; }
ckpt=$(ckpt_of "$dir/salt_in_cpp")
"$cpp" test --ckpt_path "$ckpt" --force >"$dir/cpp_test_of_salt.log" 2>&1 || { tail -n 5 "$dir/cpp_test_of_salt.log"; exit 1; }
echo "roundtrip: $name: salt-cpp's 'salt test' opened salt's run"
"$py" "$root/scripts/compare_predictions.py" "$(predictions_of "$theirs")" "$(predictions_of "$dir/salt_in_cpp")" |
  sed "s/^/roundtrip: $name: salt's run, salt vs salt-cpp: /" || differ=1
"$cpp" validate --ckpt_path "$ckpt" --force >"$dir/cpp_validate_of_salt.log" 2>&1 || { tail -n 5 "$dir/cpp_validate_of_salt.log"; exit 1; }
# the loss salt's Checkpoint callback monitors (its value is in the file name), else val/loss
monitored=$(grep -m1 '^val/jets_classification_loss ' "$dir/cpp_validate_of_salt.log" ||
            grep -m1 '^val/loss ' "$dir/cpp_validate_of_salt.log")
echo "roundtrip: $name: salt-cpp's 'salt validate' of salt's checkpoint (file name $(basename "$ckpt")):" \
  "$(echo "$monitored" | tr -s ' ')"
if "$cpp" to_onnx --ckpt_path "$ckpt" --force >"$dir/cpp_onnx_of_salt.log" 2>&1; then
  echo "roundtrip: $name: salt-cpp's 'salt to_onnx' exported salt's checkpoint: $(grep -m1 'ONNX Runtime vs' "$dir/cpp_onnx_of_salt.log" || true)"
else
  echo "roundtrip: $name: salt-cpp's 'salt to_onnx' of salt's checkpoint: $(grep -v '^info:' "$dir/cpp_onnx_of_salt.log" | head -n 1)"
fi
"$cpp" fit -c "$dir/salt_in_cpp/config.yaml" --ckpt_path "$(first_ckpt_of "$dir/salt_in_cpp")" "${paths[@]}" "${cpu[@]}" \
  --trainer.default_root_dir "$dir/cpp_resumed" --force >"$dir/cpp_resume.log" 2>&1 ||
  { tail -n 5 "$dir/cpp_resume.log"; exit 1; }
echo "roundtrip: $name: salt-cpp's 'salt fit --ckpt_path' continued salt's $(basename "$(first_ckpt_of "$dir/salt_in_cpp")") to $(basename "$(ckpt_of "$dir/cpp_resumed")")"
exit "$differ"
