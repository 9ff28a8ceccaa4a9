#!/usr/bin/env bash
# build.gtest_suites: cmake/GTestSuites.cmake in a project of two GoogleTest-like
# executables where only one is built (as scripts/gpu_check.sh builds only what it
# runs): `ctest -L <the built one's label>` lists and runs its suites, and the one not
# built shows as a failing <target>_NOT_BUILT test under its own label only. (At
# dc6d22a on the GPU machine, ctest stopped at the first unbuilt executable and no
# gpu test ran.)
# Usage: gtest_suites_test.sh SOURCE_DIR
set -euo pipefail
src=$1
work=$(mktemp -d /tmp/salt-gtest-suites-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/p"
# A stand-in that lists one suite of one case and passes, as a GoogleTest binary would.
cat >"$work/p/fake_gtest.c" <<'C'
#include <stdio.h>
#include <string.h>
int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--gtest_list_tests") == 0) printf("Fake.\n  Passes\n");
  return 0;
}
C
cat >"$work/p/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.16)
project(gtest_suites_test C)
include("$src/cmake/GTestSuites.cmake")
enable_testing()
add_executable(built fake_gtest.c)
add_executable(unbuilt fake_gtest.c)
salt_gtest_suites(built LABELS first PROPERTIES TIMEOUT 10)
salt_gtest_suites(unbuilt LABELS second PROPERTIES TIMEOUT 10)
CM
cmake -S "$work/p" -B "$work/b" >/dev/null
cmake --build "$work/b" --target built >/dev/null
cd "$work/b"
ctest -L first >first.log 2>&1 || { echo "gtest_suites: ctest -L first failed:"; cat first.log; exit 1; }
grep -q "Fake .*Passed" first.log || { echo "gtest_suites: the built suite did not run:"; cat first.log; exit 1; }
if grep -q NOT_BUILT first.log; then echo "gtest_suites: the unbuilt target leaked into -L first:"; cat first.log; exit 1; fi
if ctest -L second >second.log 2>&1; then echo "gtest_suites: ctest -L second passed with its executable missing"; exit 1; fi
grep -q "unbuilt_NOT_BUILT" second.log || { echo "gtest_suites: no unbuilt_NOT_BUILT test:"; cat second.log; exit 1; }
echo "gtest_suites: -L first ran Fake; the unbuilt target is one failing unbuilt_NOT_BUILT under -L second"
