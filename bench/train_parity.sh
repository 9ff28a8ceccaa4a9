#!/usr/bin/env bash
# salt-cpp trains as salt does: the real salt (umami-hep/salt, Python) and salt-cpp
# fit the same salt config on the same data, CPU, fp32, from salt's seed, and
# bench/python/parity_compare.py compares them: the initial weights (bit for bit),
# the batch order, per step the learning rate, beta1, the loss and each task's loss
# and the gradients' total magnitude, at the end every parameter and AdamW moment,
# and the validation losses. It prints the first step and tensor where they part.
#
# Usage (from the repository root):
#   [settings] bench/train_parity.sh DATA_DIR OUT_DIR
#   DATA_DIR  `salt toydata` output (pp_output_train.h5, ..._val.h5, ..._test_ttbar.h5,
#             norm_dict.yaml, class_dict.yaml)
#   OUT_DIR   the runs, their logs and parity.log go here (made if missing)
# Settings (environment, defaults in brackets):
#   SALT_PY [python3]        a python where `import salt` works (scripts/salt_site.py)
#   SALT_BIN [build/app/salt] and INIT_BIN [build/bench/bench_init_weights]
#   CONFIG [GN2/GN2.yaml]    salt's config, under salt's configs/ folder (or a path)
#   STEPS [50] BATCH [100]   training steps per epoch and batch size: the first
#                            STEPS*BATCH training jets are used (data.num_train)
#   EPOCHS [1] WORKERS [0] NUM_VAL [1000] SEED [42]
#   SALT_ATTN [torch-math]   salt's attn_type (flash-varlen needs flash_attn: none on a CPU)
#   OVERLAYS ['']            config files over CONFIG for both trainers (before the settings here)
#   EXTRA ['']               more `--key value` overrides for both trainers (last)
#   CALLBACKS ['']           more callbacks for both trainers, one YAML flow mapping per
#                            line, e.g. "{class_path: lightning.pytorch.callbacks.BatchSizeFinder,
#                            init_args: {init_val: 100}}" (a tuner's trials then come first)
#   MID_STEP [STEPS/2]       the step of salt-cpp's mid-epoch checkpoint (its batch order)
#   EXACT [1]                1: salt fits a second time in float64 (precision 64), the
#                            yardstick of float32 round-off: a step agrees when
#                            salt-cpp is within 1e-5 of salt, or no farther from the
#                            float64 fit than 3 times salt's own farthest so far
# Exits non-zero when a fit fails or a comparison is out of its bound.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { echo "usage: [settings] bench/train_parity.sh DATA_DIR OUT_DIR" >&2; exit 2; }
data=$(realpath "$1")
out=$(realpath -m "$2")
[ -f "$data/pp_output_train.h5" ] || { echo "train_parity.sh: no pp_output_train.h5 in $data" >&2; exit 2; }
mkdir -p "$out"
cpp=${SALT_BIN:-$root/build/app/salt}
init_bin=${INIT_BIN:-$root/build/bench/bench_init_weights}
py=${SALT_PY:-python3}
config=${CONFIG:-GN2/GN2.yaml} steps=${STEPS:-50} batch=${BATCH:-100} epochs=${EPOCHS:-1}
workers=${WORKERS:-0} num_val=${NUM_VAL:-1000} seed=${SEED:-42}
read -r -a extra <<<"${EXTRA:-}"
overlays=()
for f in ${OVERLAYS:-}; do overlays+=(-c "$(realpath "$f")"); done
log=$out/parity.log
: >"$log"
salt_dir=$("$py" -c 'import pathlib, salt; print(pathlib.Path(salt.__file__).parent)' 2>>"$log") ||
  { echo "train_parity.sh: SALT_PY ($py) cannot import salt (see $log)" >&2; exit 2; }
[ -f "$config" ] || config=$salt_dir/configs/$config
[ -f "$config" ] || { echo "train_parity.sh: no $config (a file, or one in salt's configs/)" >&2; exit 2; }
say() { echo "$*" | tee -a "$log"; }

salt_config=$out/salt_config.yaml
sed "s/attn_type: flash-varlen/attn_type: ${SALT_ATTN:-torch-math}/" "$config" >"$salt_config"
# The settings both trainers take, as flags (the same on both command lines).
common=(--data.train_file "$data/pp_output_train.h5" --data.val_file "$data/pp_output_val.h5"
  --data.test_file "$data/pp_output_test_ttbar.h5" --data.norm_dict "$data/norm_dict.yaml"
  --data.class_dict "$data/class_dict.yaml" --data.batch_size "$batch" --data.num_workers "$workers"
  --data.num_train "$((steps * batch))" --data.num_val "$num_val" --trainer.max_epochs "$epochs"
  --trainer.precision 32 --trainer.accelerator cpu --trainer.devices 1 --seed_everything "$seed" "${extra[@]}")
callbacks=$(printf '%s\n' "${CALLBACKS:-}" | sed '/^$/d; s/^/    - /')
# salt: its Checkpoint (the final state) and the probe; no logger (Comet needs an account).
cat >"$out/salt_overlay.yaml" <<YAML
trainer:
  logger: false
  callbacks:
    - class_path: salt.callbacks.Checkpoint
      init_args: {monitor_loss: val/jets_classification_loss}
    - class_path: parity_probe.ParityProbe
$callbacks
YAML
# salt-cpp: metrics.csv every step (the lr, the losses, the gradients' magnitude), its
# Checkpoint, and one checkpoint in the middle of the first epoch (its batch order).
cat >"$out/cpp_overlay.yaml" <<YAML
trainer:
  log_every_n_steps: 1
  callbacks:
    - class_path: salt.callbacks.Checkpoint
      init_args: {monitor_loss: val/jets_classification_loss}
    - class_path: lightning.pytorch.callbacks.LearningRateMonitor
    - class_path: salt.callbacks.GradientLoggerCallback
      init_args: {log_every_n_steps: 1}
    - class_path: lightning.pytorch.callbacks.ModelCheckpoint
      init_args: {every_n_train_steps: ${MID_STEP:-$((steps / 2 > 0 ? steps / 2 : 1))}, save_top_k: -1, filename: "mid-{step}"}
$callbacks
YAML
rm -rf "$out/cpp"
t0=$(date +%s)
"$init_bin" "$out/cpp_init.ckpt" -c "$salt_config" "${overlays[@]}" "${common[@]}" >>"$log" 2>&1 ||
  { say "train_parity: bench_init_weights failed (see $log)"; exit 1; }
"$cpp" fit -c "$salt_config" "${overlays[@]}" -c "$out/cpp_overlay.yaml" "${common[@]}" --force -n parity -oc \
  --trainer.default_root_dir "$out/cpp" >"$out/cpp.log" 2>&1
rc=$?
say "salt-cpp fit: exit $rc, $(($(date +%s) - t0)) s (log: $out/cpp.log)"
[ $rc = 0 ] || { tail -5 "$out/cpp.log" | tee -a "$log"; exit 1; }
# salt_fit NAME [FLAG...]: salt's own fit, the probe's files in $out/probe<NAME less
# "salt">, the run under $out/NAME, the log $out/NAME.log.
salt_fit() {
  local name=$1 probe=$out/probe${1#salt} t0 rc
  shift
  rm -rf "${out:?}/$name" "$probe"
  t0=$(date +%s)
  (cd "$out" && PARITY_PROBE_DIR="$probe" PYTHONPATH="$root/bench/python${PYTHONPATH:+:$PYTHONPATH}" \
    "$py" "$root/bench/python/salt_main.py" fit -c "$salt_config" "${overlays[@]}" -c "$out/salt_overlay.yaml" \
    "${common[@]}" "$@" --force -n "parity_$name" --trainer.default_root_dir "$out/$name") >"$out/$name.log" 2>&1
  rc=$?
  say "$name fit: exit $rc, $(($(date +%s) - t0)) s (log: $out/$name.log)"
  [ $rc = 0 ] || { grep -E "Error|error" "$out/$name.log" | tail -5 | tee -a "$log"; exit 1; }
}
salt_fit salt
exact=()
if [ "${EXACT:-1}" = 1 ]; then
  salt_fit salt64 --trainer.precision 64  # salt in float64: the yardstick of float32 round-off
  exact=(--exact-probe "$out/probe64")
fi
"$py" "$root/bench/python/parity_compare.py" --probe "$out/probe" --cpp-run "$(ls -d "$out"/cpp/*/ | head -1)" \
  --cpp-init "$out/cpp_init.ckpt" --batch "$batch" "${exact[@]}" 2>&1 | tee -a "$log"
exit "${PIPESTATUS[0]}"
