#!/usr/bin/env bash
# The same tagger at the end: salt (umami-hep/salt, Python) and salt-cpp each fit the
# same config with shuffling, dropout and their defaults for several seeds on the
# same data, then `salt test` on the test file; bench/python/seed_table.py prints the
# final validation loss and the light- and c-jet rejections at 70/77/85 % b-jet
# efficiency per trainer, mean and spread over the seeds, side by side.
#
# Usage (from the repository root):
#   [settings] bench/seeds_vs_salt.sh DATA_DIR OUT_DIR
#   DATA_DIR  `salt toydata` output; OUT_DIR  the runs and seeds.log (made if missing)
# Settings (environment, defaults in brackets):
#   SALT_PY [python3]          a python where `import salt` works (scripts/salt_site.py)
#   SALT_BIN [build/app/salt]
#   CONFIG [GN2/GN2.yaml]      salt's config (under salt's configs/, or a path)
#   OVERLAYS [configs/GN2_cpu.yaml]  config files over it, for both trainers
#   SEEDS ["1 2 3"] EPOCHS [4] BATCH [500] WORKERS [2] NUM_TRAIN [-1] NUM_VAL [-1]
#   ACCELERATOR [cpu] PRECISION [32]
# Exits non-zero when a fit or a test fails.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { echo "usage: [settings] bench/seeds_vs_salt.sh DATA_DIR OUT_DIR" >&2; exit 2; }
data=$(realpath "$1")
out=$(realpath -m "$2")
[ -f "$data/pp_output_train.h5" ] || { echo "seeds_vs_salt.sh: no pp_output_train.h5 in $data" >&2; exit 2; }
mkdir -p "$out"
cpp=${SALT_BIN:-$root/build/app/salt}
py=${SALT_PY:-python3}
config=${CONFIG:-GN2/GN2.yaml}
log=$out/seeds.log
: >"$log"
say() { echo "$*" | tee -a "$log"; }
salt_dir=$("$py" -c 'import pathlib, salt; print(pathlib.Path(salt.__file__).parent)' 2>>"$log") ||
  { echo "seeds_vs_salt.sh: SALT_PY ($py) cannot import salt (see $log)" >&2; exit 2; }
[ -f "$config" ] || config=$salt_dir/configs/$config
[ -f "$config" ] || { echo "seeds_vs_salt.sh: no $config" >&2; exit 2; }
sed "s/attn_type: flash-varlen/attn_type: torch-math/" "$config" >"$out/salt_config.yaml"
configs=(-c "$out/salt_config.yaml")
for f in ${OVERLAYS-$root/configs/GN2_cpu.yaml}; do configs+=(-c "$(realpath "$f")"); done
cat >"$out/overlay.yaml" <<YAML
trainer:
  logger: false
  callbacks:
    - class_path: salt.callbacks.Checkpoint
      init_args: {monitor_loss: val/jets_classification_loss}
    - class_path: salt.callbacks.PredictionWriter
YAML
common=(--data.train_file "$data/pp_output_train.h5" --data.val_file "$data/pp_output_val.h5"
  --data.test_file "$data/pp_output_test_ttbar.h5" --data.norm_dict "$data/norm_dict.yaml"
  --data.class_dict "$data/class_dict.yaml" --data.batch_size "${BATCH:-500}" --data.num_workers "${WORKERS:-2}"
  --data.num_train "${NUM_TRAIN:--1}" --data.num_val "${NUM_VAL:--1}" --trainer.max_epochs "${EPOCHS:-4}"
  --trainer.precision "${PRECISION:-32}" --trainer.accelerator "${ACCELERATOR:-cpu}" --trainer.devices 1)
failed=0
# fit_and_test TRAINER SEED COMMAND...: the fit, then `test` of its last checkpoint.
fit_and_test() {
  local trainer=$1 seed=$2
  shift 2
  local dir=$out/${trainer}_seed$seed t0
  rm -rf "$dir"
  t0=$(date +%s)
  (cd "$out" && "$@" fit "${configs[@]}" -c "$out/overlay.yaml" "${common[@]}" --seed_everything "$seed" --force \
    -n "seeds$seed" --trainer.default_root_dir "$dir") >"$dir.fit.log" 2>&1 || {
    say "$trainer seed $seed: fit failed (see $dir.fit.log)"; failed=1; return; }
  local run ckpt
  run=$(ls -d "$dir"/*/ | head -1)
  ckpt=$(ls "$run"ckpts/epoch=*.ckpt | sort | tail -1)
  (cd "$out" && "$@" test -c "$run/config.yaml" --ckpt_path "$ckpt" --data.test_file "$data/pp_output_test_ttbar.h5" \
    --trainer.accelerator "${ACCELERATOR:-cpu}" --trainer.devices 1 --force) >"$dir.test.log" 2>&1 || {
    say "$trainer seed $seed: test failed (see $dir.test.log)"; failed=1; return; }
  say "$trainer seed $seed: fit and test $(($(date +%s) - t0)) s, $(basename "$ckpt")"
}
for seed in ${SEEDS:-1 2 3}; do
  fit_and_test salt-cpp "$seed" "$cpp"
  fit_and_test salt "$seed" "$py" -m salt.main
done
[ $failed = 0 ] || exit 1
"$py" "$root/bench/python/seed_table.py" "$out" | tee -a "$log"
