#!/usr/bin/env bash
# What CI costs, step by step: clones the committed HEAD into a fresh folder and
# runs the steps of scripts/test.sh there (bootstrap, build, ctest, fuzzing), printing
# each step's seconds and ccache's hits (a fresh clone builds from the cache another
# checkout filled: cmake/ccache_launcher.sh). Its figures: docs/performance.md,
# "History: CI and build timings".
# Usage: scripts/ci_timing.sh [CLONE_DIR]   (default /tmp/salt-ci-timing; replaced)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
clone=${1:-/tmp/salt-ci-timing}
rm -rf "$clone" && git clone -q "$root" "$clone" && cd "$clone" || exit 1
echo "ci_timing: $(git log --oneline -1) in $clone"
command -v ccache >/dev/null && ccache -z >/dev/null
t0=$(date +%s)
step() { echo "ci_timing: $1 done at $(($(date +%s) - t0)) s (exit $2)"; }
bash scripts/bootstrap.sh; step bootstrap $?
bash scripts/build.sh >build.log 2>&1; step build $?
command -v ccache >/dev/null && ccache -s | sed -n '1,6p'
(cd build && ctest --output-on-failure -j"${SALT_JOBS:-2}" >ctest.log 2>&1); rc=$?
grep -E "tests passed|Total Test time" build/ctest.log; step ctest $rc
bash scripts/fuzz.sh "${SALT_CI_FUZZ_SECONDS:-30}" 2>&1 | grep -E "executions per second|FOUND"; step fuzz "${PIPESTATUS[0]}"
