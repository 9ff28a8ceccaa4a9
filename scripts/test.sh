#!/usr/bin/env bash
# The README's test command: install dependencies, build, run every test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/bootstrap.sh"
"$root/scripts/build.sh"
(cd "${SALT_BUILD_DIR:-$root/build}" && ctest --output-on-failure -j"${SALT_JOBS:-2}" "$@")
# Each fuzz target for a short fixed budget, side by side (the hour-long runs:
# scripts/fuzz.sh 3600). SALT_CI_FUZZ_SECONDS=0 skips them, e.g. for a subset of tests.
fuzz_seconds=${SALT_CI_FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" -gt 0 ]; then "$root/scripts/fuzz.sh" "$fuzz_seconds"; fi
