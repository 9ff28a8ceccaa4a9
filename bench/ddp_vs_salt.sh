#!/usr/bin/env bash
# Data parallel as salt trains it: the real salt (Lightning's DDP over Gloo) and
# salt-cpp fit the same salt config on 2 CPU processes from salt's seed, then both
# resume salt's own checkpoint saved inside the first epoch; each pair's logged
# training losses (the mean over ranks, step by step), validation losses and final
# weights are compared (bench/python/ddp_compare.py).
#
# Usage (from the repository root):
#   [settings] bench/ddp_vs_salt.sh DATA_DIR OUT_DIR
#   DATA_DIR  `salt toydata` output (the CI fixture's: --num_train 2000 --num_val 200)
#   OUT_DIR   the runs, their logs and ddp.log go here (made if missing)
# Settings (environment, defaults in brackets):
#   SALT_PY [python3]      a python where `import salt` works (scripts/salt_site.py)
#   SALT_BIN [build/app/salt]
#   CONFIG [tests/fixtures/salt_training/GN2.yaml] with configs/GN2_cpu.yaml over it
#   BATCH [60] NUM_TRAIN [420] NUM_VAL [130] EPOCHS [2] SEED [42]
#   WORKERS [0]            loader workers (salt's persistent_workers: its config's)
#   RESUME_STEP [1]        which of salt's mid-epoch checkpoints both trainers resume
#                          (none: no resume)
#   OVERLAYS ['']          config files over configs/GN2_cpu.yaml for both trainers
#   CALLBACKS ['']         more callbacks for both, one YAML flow mapping per line (a
#                          tuner: bench/train_parity.sh's setting)
# Exits non-zero when a fit fails or a comparison is out of its bound (1e-6 on the
# losses; weights are reported: Adam turns the round-off of gradients that are zero
# in exact arithmetic, such as attention's key bias, into whole steps of lr).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { echo "usage: [settings] bench/ddp_vs_salt.sh DATA_DIR OUT_DIR" >&2; exit 2; }
data=$(realpath "$1")
out=$(realpath -m "$2")
[ -f "$data/pp_output_train.h5" ] || { echo "ddp_vs_salt.sh: no pp_output_train.h5 in $data" >&2; exit 2; }
mkdir -p "$out"
cpp=${SALT_BIN:-$root/build/app/salt}
py=${SALT_PY:-python3}
log=$out/ddp.log
: >"$log"
say() { echo "$*" | tee -a "$log"; }
"$py" -c 'import salt' 2>>"$log" || { echo "ddp_vs_salt.sh: SALT_PY ($py) cannot import salt (see $log)" >&2; exit 2; }

sed "s/attn_type: flash-varlen/attn_type: torch-math/" "${CONFIG:-$root/tests/fixtures/salt_training/GN2.yaml}" \
  >"$out/salt_config.yaml"
overlays=()
for f in ${OVERLAYS:-}; do overlays+=(-c "$(realpath "$f")"); done
common=(-c "$out/salt_config.yaml" -c "$root/configs/GN2_cpu.yaml" "${overlays[@]}"
  --data.train_file "$data/pp_output_train.h5" --data.val_file "$data/pp_output_val.h5"
  --data.test_file "$data/pp_output_test_ttbar.h5" --data.norm_dict "$data/norm_dict.yaml"
  --data.class_dict "$data/class_dict.yaml" --data.batch_size "${BATCH:-60}" --data.num_workers "${WORKERS:-0}"
  --data.num_train "${NUM_TRAIN:-420}" --data.num_val "${NUM_VAL:-130}" --trainer.max_epochs "${EPOCHS:-2}"
  --trainer.precision 32 --trainer.accelerator cpu --trainer.devices 2 --seed_everything "${SEED:-42}")
# Both: a checkpoint after every step (salt's are the ones resumed); salt: the probe
# (bench/python/parity_probe.py) and no logger; salt-cpp: metrics.csv every step.
callbacks='    - class_path: salt.callbacks.Checkpoint
      init_args: {monitor_loss: val/jets_classification_loss}
    - class_path: lightning.pytorch.callbacks.ModelCheckpoint
      init_args: {every_n_train_steps: 1, save_top_k: -1, filename: "mid-{step}"}'
extra=$(printf '%s\n' "${CALLBACKS:-}" | sed '/^$/d; s/^/    - /')
[ -z "$extra" ] || callbacks="$callbacks
$extra"
printf 'trainer:\n  logger: false\n  log_every_n_steps: 1\n  callbacks:\n%s\n    - class_path: parity_probe.ParityProbe\n' \
  "$callbacks" >"$out/salt_overlay.yaml"
printf 'trainer:\n  log_every_n_steps: 1\n  callbacks:\n%s\n' "$callbacks" >"$out/cpp_overlay.yaml"

# fit WHO NAME [FLAG...]: WHO is salt or cpp; the run under $out/NAME, its log $out/NAME.log.
fit() {
  local who=$1 name=$2 t0 rc
  shift 2
  rm -rf "${out:?}/$name" "$out/probe_$name" "$out/probe_${name}_rank"*
  t0=$(date +%s)
  if [ "$who" = salt ]; then
    # USE_LIBUV=0: torch 2.6's TCPStore on this Gloo build has no libuv backend.
    (cd "$out" && USE_LIBUV=0 OMP_NUM_THREADS=1 PARITY_PROBE_DIR="$out/probe_$name" \
      PYTHONPATH="$root/bench/python${PYTHONPATH:+:$PYTHONPATH}" "$py" "$root/bench/python/salt_main.py" fit \
      "${common[@]}" -c "$out/salt_overlay.yaml" "$@" --force -n "$name" --trainer.default_root_dir "$out/$name")
  else
    (cd "$out" && OMP_NUM_THREADS=1 "$cpp" fit "${common[@]}" -c "$out/cpp_overlay.yaml" "$@" --force -n "$name" -oc \
      --trainer.default_root_dir "$out/$name")
  fi >"$out/$name.log" 2>&1
  rc=$?
  say "$who $name: exit $rc, $(($(date +%s) - t0)) s (log: $out/$name.log)"
  [ $rc = 0 ] || { tail -5 "$out/$name.log" | tee -a "$log"; exit 1; }
}
compare() {
  "$py" "$root/bench/python/ddp_compare.py" "$out/probe_$1" "$out/$2" 2>&1 | grep -v Warning | tee -a "$log"
  return "${PIPESTATUS[0]}"
}
fit salt salt
fit cpp cpp
say "== 2 ranks from salt's seed"
compare salt cpp || status=1
[ "${RESUME_STEP:-1}" = none ] && exit "${status:-0}"
resume=$(ls -d "$out"/salt/*/checkpoints)/mid-step=${RESUME_STEP:-1}.ckpt
fit salt salt_resumed --ckpt_path "$resume"
fit cpp cpp_resumed --ckpt_path "$resume"
say "== 2 ranks resuming salt's $(basename "$resume")"
compare salt_resumed cpp_resumed || status=1
exit "${status:-0}"
