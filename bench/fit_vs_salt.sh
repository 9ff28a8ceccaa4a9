#!/usr/bin/env bash
# salt-cpp's `salt fit` next to salt's own `salt fit` (umami-hep/salt, Python), GN2 at
# salt's size on the same toy data, batch size, precision, epochs and loader workers,
# the fits interleaved (salt-cpp, salt, salt-cpp, salt, ...). Each training epoch is
# timed the same way in both: from its first batch to its last training batch, the
# card synchronised, validation excluded (salt-cpp's `info: train epoch N: S s`;
# salt's through bench/python/epoch_timer.py). Epoch 0 (warm-up: CUDA's lazy
# loading, the allocator's growth, salt's worker start) is left out: a fit's
# steady rate is the median of its later epochs, and the figure the median over
# rounds (spread: min..max).
#
# Usage (from the repository root):
#   [settings] bench/fit_vs_salt.sh DATA_DIR OUT_DIR
#   DATA_DIR  salt-cpp's `salt toydata` output (pp_output_train.h5, ..._val.h5,
#             ..._test_ttbar.h5, norm_dict.yaml, class_dict.yaml); its number of
#             training jets is what each epoch trains.
#   OUT_DIR   the runs and fit_vs_salt.log go here (made if missing).
# Settings (environment, defaults in brackets):
#   SALT_BIN [build/app/salt]     salt-cpp's binary
#   SALT_PY [python3]             a python where `import salt` works, e.g. with
#                                 PYTHONPATH=<folder made by scripts/salt_site.py>
#   BATCH [4000] PRECISION [bf16-mixed] EPOCHS [4] WORKERS [15] ROUNDS [2]
#   ACCELERATOR [gpu]             gpu or cpu (both trainers)
#   SALT_ATTN [from the config]   salt's attn_type (its GN2.yaml says flash-varlen, which
#                                 salt replaces by torch-math, with a warning, where the
#                                 flash_attn package is missing); e.g. torch-meff
#   CPP_CONFIGS ["-c configs/GN2.yaml"]  salt-cpp's configs (salt takes its own GN2.yaml)
# Prints one line per fit and a summary; exits non-zero when a fit failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { echo "usage: [settings] bench/fit_vs_salt.sh DATA_DIR OUT_DIR" >&2; exit 2; }
data=$(realpath "$1")
out=$(realpath -m "$2")
[ -f "$data/pp_output_train.h5" ] || { echo "fit_vs_salt.sh: no pp_output_train.h5 in $data" >&2; exit 2; }
mkdir -p "$out"
cpp=${SALT_BIN:-$root/build/app/salt}
py=${SALT_PY:-python3}
batch=${BATCH:-4000} precision=${PRECISION:-bf16-mixed} epochs=${EPOCHS:-4} workers=${WORKERS:-15}
rounds=${ROUNDS:-2} accel=${ACCELERATOR:-gpu}
read -r -a cpp_configs <<<"${CPP_CONFIGS:--c configs/GN2.yaml}"
log=$out/fit_vs_salt.log
: >"$log"
salt_dir=$("$py" -c 'import pathlib, salt; print(pathlib.Path(salt.__file__).parent)' 2>>"$log") ||
  { echo "fit_vs_salt.sh: SALT_PY ($py) cannot import salt (see $log)" >&2; exit 2; }
say() { echo "$*" | tee -a "$log"; }

# salt's own GN2.yaml, with only the attention changed when SALT_ATTN says so, and an
# overlay with the data, sizes and callbacks: no logger (its Comet logger needs an
# account; LearningRateMonitor needs a logger), salt's Checkpoint as in base.yaml,
# the epoch timer.
salt_config=$out/salt_GN2.yaml
sed "s/attn_type: flash-varlen/attn_type: ${SALT_ATTN:-flash-varlen}/" "$salt_dir/configs/GN2/GN2.yaml" >"$salt_config"
cat >"$out/salt_overlay.yaml" <<YAML
data:
  train_file: $data/pp_output_train.h5
  val_file: $data/pp_output_val.h5
  test_file: $data/pp_output_test_ttbar.h5
  norm_dict: $data/norm_dict.yaml
  class_dict: $data/class_dict.yaml
  batch_size: $batch
  num_workers: $workers
  num_train: -1
  num_val: -1
trainer:
  max_epochs: $epochs
  precision: $precision
  accelerator: $accel
  devices: 1
  logger: false
  callbacks:
    - class_path: salt.callbacks.Checkpoint
      init_args: {monitor_loss: val/jets_classification_loss}
    - class_path: epoch_timer.EpochTimer
    - class_path: lightning.pytorch.callbacks.TQDMProgressBar
      init_args: {refresh_rate: 50}
YAML

# steady FILE PATTERN: the median jets/s of epochs >= 1 in lines "... train epoch N: ... R jets/s".
steady() {
  grep -oE "$2" "$1" | awk '{for (i = 1; i <= NF; i++) if ($i == "epoch") e = $(i + 1) + 0;
      if (e >= 1) print $(NF - 1)}' | sort -n | awk '{v[NR] = $1} END {if (NR == 0) print 0;
      else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
n_train=$("$py" -c "import h5py; print(len(h5py.File('$data/pp_output_train.h5')['jets']))")
failed=0
cpp_rates=() salt_rates=()
for r in $(seq 1 "$rounds"); do
  run=$out/cpp_$r
  t0=$(date +%s.%N)
  "$cpp" fit "${cpp_configs[@]}" --force -n "fit_vs_salt_$r" -oc --trainer.default_root_dir "$run" \
    --data.train_file "$data/pp_output_train.h5" --data.val_file "$data/pp_output_val.h5" \
    --data.test_file "$data/pp_output_test_ttbar.h5" --data.norm_dict "$data/norm_dict.yaml" \
    --data.class_dict "$data/class_dict.yaml" --data.batch_size "$batch" --data.num_workers "$workers" \
    --data.num_train -1 --data.num_val -1 --trainer.max_epochs "$epochs" --trainer.precision "$precision" \
    --trainer.accelerator "$accel" --trainer.devices 1 >"$run.log" 2>&1
  rc=$?
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
  # salt-cpp's "info: train epoch N: S s, ..." as "train epoch N: R jets/s"
  sed -nE "s/.*info: train epoch ([0-9]+): ([0-9.]+) s,.*/\1 \2/p" "$run.log" |
    awk -v n="$n_train" '{printf "train epoch %d: %.0f jets/s\n", $1, n / $2}' >"$run.rates"
  rate=$(steady "$run.rates" "train epoch [0-9]+: [0-9]+ jets/s")
  say "salt-cpp round $r: exit $rc, epochs $(awk '{printf "%s ", $NF == "jets/s" ? $(NF-1) : ""}' "$run.rates")jets/s," \
    "steady $rate jets/s, whole command ${wall%.*} s"
  [ $rc = 0 ] || { failed=1; tail -5 "$run.log" | tee -a "$log"; }
  cpp_rates+=("$rate")

  run=$out/salt_$r
  t0=$(date +%s.%N)
  (cd "$out" && PYTHONPATH="$root/bench/python${PYTHONPATH:+:$PYTHONPATH}" "$py" -m salt.main fit \
    -c "$salt_config" -c "$out/salt_overlay.yaml" --force -n "fit_vs_salt_$r" \
    --trainer.default_root_dir "$run") >"$run.log" 2>&1
  rc=$?
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
  rate=$(steady "$run.log" "train epoch [0-9]+: [0-9]+ jets in [0-9.]+ s: [0-9]+ jets/s")
  say "salt round $r: exit $rc, epochs $(grep -oE "train epoch [0-9]+: .* [0-9]+ jets/s" "$run.log" |
    awk '{printf "%s ", $(NF-1)}')jets/s, steady $rate jets/s, whole command ${wall%.*} s" \
    "(attention: ${SALT_ATTN:-flash-varlen}$(grep -q "Reverting to torch-math" "$run.log" && echo ", which salt replaced by torch-math: no flash_attn"))"
  [ $rc = 0 ] || { failed=1; grep -E "Error|error" "$run.log" | tail -3 | tee -a "$log"; }
  salt_rates+=("$rate")
done
med() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2];
  else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
range() { printf '%s\n' "$@" | sort -n | awk 'NR == 1 {lo = $1} {hi = $1} END {print lo ".." hi}'; }
c=$(med "${cpp_rates[@]}") s=$(med "${salt_rates[@]}")
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
say "fit_vs_salt: ${device:-cpu}, GN2, batch $batch, $precision, $n_train training jets, $epochs epochs," \
  "$workers workers, $rounds rounds: salt-cpp $c jets/s ($(range "${cpp_rates[@]}")), salt $s jets/s" \
  "($(range "${salt_rates[@]}")), ratio $(awk -v c="$c" -v s="$s" 'BEGIN {if (s > 0) printf "%.2fx", c / s; else printf "n/a"}')"
exit $failed
