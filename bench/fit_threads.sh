#!/usr/bin/env bash
# salt's GN2.yaml fit on the CPU at 32 and bf16-mixed, with the default compute
# threads (core/cpu_budget.h) next to one thread (LibTorch 1.13's own default on
# some machines) and next to the default threads with libgomp's own spin
# (GOMP_SPINCOUNT=300000: what salt-cpp ran before core/omp_spin.h set 10000 beside
# OpenBLAS's threads), interleaved, ROUNDS rounds (default 2): each line one fit's
# training jets/s, then the medians and the ratios. Beside them, in the same run,
# the plain-PyTorch GN2 of bench/python/gn2_reference.py (salt's GN2 sizes, batch
# 1000, AdamW, torch's default threads; a training step on batches in memory, not a
# fit, so the fit / step ratio also holds the loader and the loop; in bf16 on a CPU
# without AVX-512 one step of 50 jets, see reference()). SALT_PYTHON
# names the Python with torch (default /usr/bin/python3).
#   bench/fit_threads.sh [SALT_BINARY] [ROUNDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
salt=${1:-$root/build/app/salt}
rounds=${2:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$salt" toydata -o "$work/data" --num_train 4000 --num_val 1000 --num_test 10 >/dev/null 2>&1

fit() {  # precision, OMP_NUM_THREADS ('' for the default), GOMP_SPINCOUNT ('' for salt-cpp's) -> jets/s
  local d threads=(-u OMP_NUM_THREADS -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u SALT_SET_GOMP_SPINCOUNT)
  [ -n "$2" ] && threads+=("OMP_NUM_THREADS=$2")
  [ -n "${3:-}" ] && threads+=("GOMP_SPINCOUNT=$3")
  d=$(mktemp -d -p "$work")
  env "${threads[@]}" "$salt" fit -c "$root/configs/GN2.yaml" \
    --data.train_file "$work/data/pp_output_train.h5" --data.val_file "$work/data/pp_output_val.h5" \
    --data.norm_dict "$work/data/norm_dict.yaml" --data.class_dict "$work/data/class_dict.yaml" \
    --data.batch_size 1000 --data.num_train 4000 --data.num_val 1000 --data.num_workers 0 \
    --trainer.max_epochs 1 --trainer.precision "$1" --trainer.enable_progress_bar false \
    --trainer.default_root_dir "$d" --force 2>&1 | sed -n 's/.*trained [0-9]* jets in [0-9.]* s: \([0-9]*\) jets\/s.*/\1/p'
}

python=${SALT_PYTHON:-/usr/bin/python3}
reference() {  # precision -> the PyTorch GN2's training-step jets/s
  # torch's bf16 matrix products on a CPU without AVX-512 are scalar code, ~100x
  # slower (docs/performance.md): there the bf16 reference runs one step of 50 jets
  # (~11 s) instead of three of 1000 (which would take ~10 minutes).
  local batch=1000 iters=3
  if [ "$1" = bf16-mixed ] && ! grep -q avx512bw /proc/cpuinfo; then batch=50 iters=1; fi
  "$python" "$root/bench/python/gn2_reference.py" --batch "$batch" --embed 256 --layers 4 --heads 8 --out 128 \
    --task-hidden 128,64,32 --optimizer adamw --iters "$iters" --precision "$1" 2>/dev/null |
    sed -n 's/.*jets_per_s=\([0-9.]*\).*/\1/p'
}

declare -A runs
for r in $(seq "$rounds"); do
  for p in 32 bf16-mixed; do
    for t in 1 ""; do
      v=$(fit "$p" "$t")
      echo "round $r  precision $p  threads ${t:-default}: $v jets/s"
      runs[$p.${t:-default}]+="$v "
    done
    v=$(fit "$p" "" 300000)
    echo "round $r  precision $p  threads default, libgomp's spin (GOMP_SPINCOUNT=300000): $v jets/s"
    runs[$p.spin]+="$v "
    v=$(reference "$p")
    echo "round $r  precision $p  PyTorch reference step: $v jets/s"
    runs[$p.torch]+="$v "
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for p in 32 bf16-mixed; do
  one=$(echo "${runs[$p.1]}" | median) def=$(echo "${runs[$p.default]}" | median)
  spin=$(echo "${runs[$p.spin]}" | median) torch=$(echo "${runs[$p.torch]}" | median)
  awk -v p="$p" -v one="$one" -v def="$def" -v spin="$spin" -v torch="$torch" 'BEGIN {
    printf "%-11s one thread %6.0f  default %6.0f  default/one %.2fx  libgomp spin %6.0f  default/spin %.2fx", p, one, def, def / one, spin, def / spin
    printf "  PyTorch step %6.1f  fit/PyTorch %.1fx\n", torch, def / torch}'
done
