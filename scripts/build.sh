#!/usr/bin/env bash
# Configure (once) and build. Builds take a lock: LibTorch builds on 2 cores
# must never run two at a time. Usage: scripts/build.sh [cmake --build args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SALT_BUILD_DIR:-$root/build}
exec 9>/tmp/salt-cpp-build.lock
flock 9
# ccache, when installed, runs through cmake/ccache_launcher.sh (set up there to
# hit across checkouts, precompiled headers included).
if [ ! -f "$build/CMakeCache.txt" ]; then
  # clang when installed (scripts/bootstrap.sh installs it), unless CC/CXX say
  # otherwise: with the precompiled torch header it instantiates torch's templates
  # once, in the header (-fpch-instantiate-templates, CMake's default for clang),
  # where GCC redoes them in every file that includes it: an empty file with the
  # header takes 8.4 s with GCC and 2.6 s with clang, a cold build 13 min with
  # clang against 45 with GCC (docs/architecture.md, "Build speed").
  if [ -z "${CXX:-}" ] && command -v clang++ >/dev/null && command -v clang >/dev/null; then
    export CC=clang CXX=clang++
  fi
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${SALT_CMAKE_ARGS:-} >/dev/null
fi
cmake --build "$build" -j"${SALT_JOBS:-2}" "$@"
