#!/usr/bin/env bash
# The export benchmark: trains salt's GN2 (configs/GN2.yaml, full size) briefly on
# the toy data, exports it, and prints ONNX Runtime's jets/s (one thread, one jet
# per call) next to salt-cpp's own per-jet forward (bench/onnx.cpp).
# Usage: bench/onnx_bench.sh [WORK_DIR]   (builds nothing: run scripts/build.sh first)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SALT_BUILD_DIR:-$root/build}
work=${1:-/tmp/salt_onnx_bench}
rm -rf "$work" && mkdir -p "$work"
"$build/app/salt" toydata -o "$work/data" --num_train 2000 --num_val 500 --num_test 1000 >/dev/null 2>&1
"$build/app/salt" fit -c "$root/configs/GN2.yaml" --data.train_file "$work/data/pp_output_train.h5" \
  --data.val_file "$work/data/pp_output_val.h5" --data.test_file "$work/data/pp_output_test_ttbar.h5" \
  --data.norm_dict "$work/data/norm_dict.yaml" --data.class_dict "$work/data/class_dict.yaml" \
  --data.num_workers 0 --data.batch_size 500 --trainer.max_epochs 1 --trainer.accelerator cpu --trainer.devices 1 \
  --trainer.default_root_dir "$work/logs" --force >"$work/fit.log" 2>&1
run="$work/logs/$(ls "$work/logs")"
"$build/bench/bench_onnx" --ckpt_path "$(ls "$run"/ckpts/*.ckpt | head -n 1)" --jets 1000 --repeat 3
