#!/usr/bin/env bash
# The README's test command: install dependencies, build, run every test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/bootstrap.sh"
"$root/scripts/build.sh"
cd "${SALT_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j"${SALT_JOBS:-2}" "$@"
