#!/usr/bin/env bash
# Configure (when needed) and build. Builds take a lock: LibTorch builds on 2 cores
# must never run two at a time. Usage: scripts/build.sh [cmake --build args...]
#
# Every script builds the same configuration (the demo, the tests, CI, the fuzzers
# with -DSALT_FUZZ=ON on top): RelWithDebInfo, Ninja, and the libraries as a unity
# build (SALT_UNITY_BUILD: batches of 8 files, half the CPU time of a cold build;
# docs/architecture.md, "Unity build"). SALT_UNITY_BUILD=OFF builds file by file
# (quicker rebuilds of one file while developing); SALT_CMAKE_ARGS adds options.
#
# The folder is configured again whenever its last configure did not finish (failed
# or interrupted) or ran with other options, from a fresh cache so that no option of
# that run lingers (the compiled objects stay, and ninja rebuilds only what the new
# options change): running the same command again recovers, and a changed
# configuration is picked up. A folder configured by hand (no stamp) keeps its cache,
# configured once more with these options.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SALT_BUILD_DIR:-$root/build}
exec 9>/tmp/salt-cpp-build.lock
flock 9
# shellcheck disable=SC2206  # SALT_CMAKE_ARGS is a list of words
options=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSALT_UNITY_BUILD="${SALT_UNITY_BUILD:-ON}" ${SALT_CMAKE_ARGS:-})
stamp=$build/salt-configured-with.txt  # the options of the last configure, "pending ..." while it runs
cache=$build/CMakeCache.txt
if [ ! -f "$build/build.ninja" ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${options[*]}" ]; then
  if [ -f "$cache" ] && { [ -f "$stamp" ] || ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache"; }; then
    why="other options than its last configure"
    grep -qs '^pending' "$stamp" && why="its last configure did not finish"
    [ -f "$stamp" ] || why="it was configured for another generator"
    echo "build.sh: configuring $build afresh: $why"
    # the same compilers as before, unless CC/CXX say otherwise
    [ -n "${CC:-}" ] || CC=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$cache")
    [ -n "${CXX:-}" ] || CXX=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache")
    export CC CXX
    rm -rf "$cache" "$build/CMakeFiles"
  fi
  # The compiler of a new folder: clang when installed (scripts/bootstrap.sh installs
  # it), unless CC/CXX say otherwise. With the precompiled torch header it
  # instantiates torch's templates once, in the header (-fpch-instantiate-templates,
  # CMake's default for clang), where GCC redoes them in every file that includes it:
  # an empty file with the header takes 8.4 s with GCC and 2.6 s with clang, a cold
  # build 13 min with clang against 45 with GCC (docs/architecture.md, "Build speed").
  if [ ! -f "$cache" ] && [ -z "${CXX:-}" ] && command -v clang++ >/dev/null && command -v clang >/dev/null; then
    export CC=clang CXX=clang++
  fi
  mkdir -p "$build"
  printf 'pending %s' "${options[*]}" > "$stamp"
  cmake -S "$root" -B "$build" "${options[@]}" >/dev/null
  printf '%s' "${options[*]}" > "$stamp"
fi
cmake --build "$build" -j"${SALT_JOBS:-2}" "$@"
