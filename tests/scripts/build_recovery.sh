#!/usr/bin/env bash
# scripts/build.sh recovers by running the same command again: after configures
# interrupted by Ctrl-C (before and after CMake wrote its cache), after one that failed on a bad option (which must not
# linger), when an option changes (and changes back), and in a folder another
# generator configured; a second run of the same command configures nothing. Real
# configures of this checkout in a scratch folder; `--target help` builds nothing.
# Usage: build_recovery.sh WORK_DIR
set -euo pipefail
work=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work"
b=$work/build
out=$work/out.txt
build() { SALT_BUILD_DIR=$b "$root/scripts/build.sh" --target help >"$out" 2>&1; }
cached() { sed -n "s/^$1:[A-Z]*=//p" "$b/CMakeCache.txt"; }
fail() { echo "FAIL: $*"; sed 's/^/  | /' "$out"; exit 1; }

# 1. Ctrl-C to a first configure (the whole process group, as a terminal sends it):
# once early, before CMake wrote its cache, once after it wrote it but before it
# generated build.ninja. The same command afterwards configures and builds.
interrupt_when() {  # interrupt_when FILE: interrupts as soon as FILE exists
  rm -rf "$b"
  # in a session of its own, with SIGINT back to its default (a background job of a
  # script starts with it ignored)
  SALT_BUILD_DIR=$b python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setsid()
os.execvp(sys.argv[1], sys.argv[1:])' "$root/scripts/build.sh" --target help >"$out" 2>&1 &
  local pid=$!
  # no deadline of its own (ctest's TIMEOUT is one): build.sh may first wait for the build lock
  while [ ! -e "$1" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.02; done
  kill -INT -- "-$pid" 2>/dev/null || true
  if wait "$pid"; then fail "the configure finished before the interrupt: nothing was interrupted"; fi
  [ ! -f "$b/build.ninja" ] || fail "the interrupted configure had generated build.ninja already"
  grep -qs '^pending' "$b/salt-configured-with.txt" || fail "no configure was under way when interrupted"
}
interrupt_when "$b/salt-configured-with.txt"
build || fail "the run after a configure interrupted early failed"
[ -f "$b/build.ninja" ] && [ "$(cached SALT_UNITY_BUILD)" = ON ] || fail "no unity build configured after the interruption"
interrupt_when "$b/CMakeCache.txt"
[ -f "$b/CMakeCache.txt" ] || fail "the interrupted configure left no cache"
build || fail "the run after a configure interrupted late failed"
grep -q "afresh: its last configure did not finish" "$out" || fail "the interrupted configure's cache was trusted"
[ -f "$b/build.ninja" ] && [ "$(cached SALT_UNITY_BUILD)" = ON ] || fail "no unity build configured after the interruption"

# 2. A configure that fails on a bad option; the same command without it then works.
if SALT_CMAKE_ARGS="-DSALT_GLOO_INCLUDE_DIR=$work/nowhere" build; then fail "a Gloo folder without headers was accepted"; fi
grep -q "holds no gloo/algorithm.h" <<<"$(tr -s " \n" " " <"$out")" || fail "the failed configure did not say why"  # CMake wraps its message
build || fail "the option of the failed configure lingered"
[ -z "$(cached SALT_GLOO_INCLUDE_DIR)" ] || fail "SALT_GLOO_INCLUDE_DIR is still $(cached SALT_GLOO_INCLUDE_DIR)"

# 3. A changed option is picked up, and so is its change back.
SALT_UNITY_BUILD=OFF build || fail "SALT_UNITY_BUILD=OFF failed"
[ "$(cached SALT_UNITY_BUILD)" = OFF ] && ! grep -q "/unity/" "$b/build.ninja" || fail "SALT_UNITY_BUILD=OFF not picked up"
build || fail "back to the unity build failed"
[ "$(cached SALT_UNITY_BUILD)" = ON ] && grep -q "/unity/salt_train_torch_0.cpp" "$b/build.ninja" ||
  fail "the unity build not picked up again"

# 4. The same command again: nothing to configure.
before=$(stat -c %Y "$b/CMakeCache.txt")
sleep 1
build || fail "a second run failed"
[ "$(stat -c %Y "$b/CMakeCache.txt")" = "$before" ] && ! grep -q afresh "$out" || fail "a second run configured again"

# 5. A folder another generator configured.
rm -rf "$b"
cmake -S "$root" -B "$b" -G "Unix Makefiles" >/dev/null
build || fail "a Makefiles folder was not taken over"
grep -q "afresh: it was configured for another generator" "$out" && [ -f "$b/build.ninja" ] || fail "the Makefiles folder not configured for Ninja"
echo "build_recovery: interrupted, failed, changed options and another generator's folder all recover"
