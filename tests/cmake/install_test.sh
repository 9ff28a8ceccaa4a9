#!/usr/bin/env bash
# build.install: `cmake --install` into a temporary prefix gives a salt that runs
# from any folder without the source tree (lib/core/install_paths.h): it reads the
# installed configs (a marker put into the installed base.yaml shows in the composed
# config), writes toy data, fits, tests and plots from a folder outside the tree, and
# the installed submit helpers find the installed binary.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
work=$(mktemp -d /tmp/salt-install-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" --component salt >/dev/null
salt=$prefix/bin/salt
share=$prefix/share/salt
for f in bin/salt share/salt/configs/base.yaml share/salt/configs/GN2.yaml share/salt/scripts/ort_run.js \
         share/salt/submit/submit_slurm share/salt/submit/find_salt.sh; do
  [ -e "$prefix/$f" ] || { echo "install: $f is missing from the prefix"; exit 1; }
done
if [ -e "$share/source" ]; then echo "install: the build folder's source link was installed"; exit 1; fi
echo "install: $(find "$prefix" -type f | wc -l) files in $prefix"

sed -i 's/^seed_everything: .*/seed_everything: 4242/' "$share/configs/base.yaml"
mkdir -p "$work/run"
cd "$work/run"
unset SALT_BASE_CONFIG SALT_SHARE_DIR SALT_BINARY SALT_BUILD_DIR
"$salt" fit -c "$share/configs/GN2.yaml" -c "$share/configs/GN2_cpu.yaml" --print_config >composed.yaml
grep -q '^seed_everything: 4242$' composed.yaml ||
  { echo "install: the composed config did not come from the installed base.yaml"; exit 1; }
echo "install: configs/base.yaml read from $share/configs"

"$salt" toydata --output_dir data/toy --num_train 200 --num_val 100 --num_test 100
"$salt" fit -c "$share/configs/GN2.yaml" -c "$share/configs/GN2_cpu.yaml" --trainer.max_epochs 1 \
  --data.batch_size 50 --data.num_workers 0 --force -ls installed
"$salt" test -c logs/GN2_cpu_installed/config.yaml --data.num_workers 0
ls logs/GN2_cpu_installed/ckpts/*__test_ttbar.h5 >/dev/null
echo "install: fit and tested from $work/run"

help=$("$share/submit/submit_slurm" --help 2>&1) || { echo "install: submit_slurm --help failed: $help"; exit 1; }
echo "install: the installed submit_slurm runs"
