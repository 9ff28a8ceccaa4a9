#!/usr/bin/env bash
# Configure (once) and build. Builds take a lock: LibTorch builds on 2 cores
# must never run two at a time. Usage: scripts/build.sh [cmake --build args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SALT_BUILD_DIR:-$root/build}
exec 9>/tmp/salt-cpp-build.lock
flock 9
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${SALT_CMAKE_ARGS:-} >/dev/null
fi
cmake --build "$build" -j"${SALT_JOBS:-2}" "$@"
