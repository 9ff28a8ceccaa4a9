#!/usr/bin/env bash
# The README's main job on the bundled default: install dependencies, build,
# generate the toy data set (if absent), train the CPU-sized GN2 for a few
# epochs, evaluate the best checkpoint, print the b-tagging performance, draw the
# rejection and loss curves, and export the tagger to ONNX (checked in ONNX Runtime).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/bootstrap.sh" --demo  # the tests' extra packages come with scripts/test.sh
# The build scripts/test.sh and CI build too (scripts/build.sh), so CI's build is this one.
"$root/scripts/build.sh" --target salt
cd "$root"
salt=${SALT_BUILD_DIR:-$root/build}/app/salt
"$salt" --version

if [ ! -f data/toy/pp_output_train.h5 ]; then
  "$salt" toydata --output_dir data/toy --num_train 60000 --num_val 10000 --num_test 20000
fi

# A demo is not a reproducible physics run: --force skips the clean-git-tree check.
suffix=demo_$(date +%Y%m%d-%H%M%S)
"$salt" fit -c configs/GN2.yaml -c configs/GN2_cpu.yaml --trainer.max_epochs 3 --force -ls "$suffix"
"$salt" test -c "logs/GN2_cpu_$suffix/config.yaml"
# The checkpoint salt test chose (the best) is the one its prediction file is named after.
tested=$(ls "logs/GN2_cpu_$suffix"/ckpts/*__test_*.h5 | head -n 1)
"$salt" to_onnx --force --ckpt_path "${tested%%__test_*}.ckpt"
echo "run directory: logs/GN2_cpu_$suffix"
echo "plots: ${tested%.h5}_roc.png (light- and c-jet rejection; also .pdf) and logs/GN2_cpu_$suffix/loss_curves.png"
