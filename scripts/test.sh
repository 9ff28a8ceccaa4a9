#!/usr/bin/env bash
# The README's test command: install dependencies, build, run every test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/bootstrap.sh"
"$root/scripts/build.sh"
# ctest runs two tests at a time on the 2 cores: each salt it starts computes with
# one thread, as the fit tests always asked, instead of every core (the default
# since core/cpu_budget.h), so that two never fight over the cores. The tests of
# the thread rule clear the variable themselves.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
(cd "${SALT_BUILD_DIR:-$root/build}" && ctest --output-on-failure -j"${SALT_JOBS:-2}" "$@")
# Each fuzz target for a short fixed budget, side by side (the hour-long runs:
# scripts/fuzz.sh 3600). SALT_CI_FUZZ_SECONDS=0 skips them, e.g. for a subset of tests.
fuzz_seconds=${SALT_CI_FUZZ_SECONDS:-30}
if [ "$fuzz_seconds" -gt 0 ]; then "$root/scripts/fuzz.sh" "$fuzz_seconds"; fi
