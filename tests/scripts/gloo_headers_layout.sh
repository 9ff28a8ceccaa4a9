#!/usr/bin/env bash
# scripts/gloo_headers.sh on a small stand-in for a pytorch/gloo clone (a real git
# repository laid out as gloo's): the headers only (no sources, tests or benchmarks),
# gloo/config.h generated with the values of torch's CUDA wheel, gloo's licence; and
# one line with a non-zero exit, the previous folder untouched, for a config.h.in
# option it does not know, for ProcessGroupGloo's headers starting to read config.h,
# for a commit the clone lacks and for a missing clone.
# Usage: gloo_headers_layout.sh WORK_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$1
rm -rf "$work"
mkdir -p "$work"
repo=$work/gloo
script=$root/scripts/gloo_headers.sh
fail() { echo "gloo_headers_layout: $*" >&2; exit 1; }

mkdir -p "$repo/gloo/common" "$repo/gloo/rendezvous" "$repo/gloo/transport" "$repo/gloo/test" "$repo/gloo/benchmark"
printf 'project(gloo CXX C)\nset(GLOO_VERSION_MAJOR 0)\nset(GLOO_VERSION_MINOR 5)\nset(GLOO_VERSION_PATCH 0)\n' \
  >"$repo/CMakeLists.txt"
echo "BSD License (stand-in)" >"$repo/LICENSE"
{
  printf '#pragma once\n#define GLOO_VERSION_MAJOR @GLOO_VERSION_MAJOR@\n'
  printf '#define GLOO_VERSION_MINOR @GLOO_VERSION_MINOR@\n#define GLOO_VERSION_PATCH @GLOO_VERSION_PATCH@\n'
  for name in USE_CUDA USE_NCCL USE_ROCM USE_RCCL USE_REDIS USE_IBVERBS USE_MPI USE_AVX USE_LIBUV \
      HAVE_TRANSPORT_TCP HAVE_TRANSPORT_TCP_TLS HAVE_TRANSPORT_IBVERBS HAVE_TRANSPORT_UV USE_TORCH_DTYPES; do
    echo "#cmakedefine01 GLOO_$name"
  done
} >"$repo/gloo/config.h.in"
# What torch's ProcessGroupGloo.hpp includes, plus what must be left out.
echo '#pragma once' >"$repo/gloo/common/error.h"
printf '#pragma once\n#include "gloo/common/error.h"\nnamespace gloo { class Context {}; }\n' >"$repo/gloo/context.h"
printf '#pragma once\n#include "gloo/context.h"\n' >"$repo/gloo/algorithm.h"
echo '#pragma once' >"$repo/gloo/rendezvous/store.h"
echo '#pragma once' >"$repo/gloo/transport/device.h"
echo 'int allreduce() { return 0; }' >"$repo/gloo/allreduce.cc"
echo '#pragma once' >"$repo/gloo/test/base_test.h"
echo '#pragma once' >"$repo/gloo/benchmark/runner.h"
git_() { git -C "$repo" -c user.name=test -c user.email=test@example.com "$@"; }
commit() { git_ add -A && git_ commit -q -m "$1" && git_ rev-parse HEAD; }
git_ init -q
good=$(commit "gloo as torch pins it")

# 1. The layout.
out=$work/out
SALT_GLOO_COMMIT=$good "$script" "$repo" "$out" >"$work/stdout" 2>"$work/stderr" || fail "refused a good clone: $(cat "$work/stderr")"
for f in gloo/algorithm.h gloo/context.h gloo/common/error.h gloo/rendezvous/store.h gloo/transport/device.h \
    gloo/config.h LICENSE.gloo SOURCE.txt; do
  [ -f "$out/$f" ] || fail "no $f in the layout"
done
for f in gloo/allreduce.cc gloo/test gloo/benchmark gloo/config.h.in; do
  [ ! -e "$out/$f" ] || fail "$f was copied"
done
config=$out/gloo/config.h
for line in "#define GLOO_VERSION_MAJOR 0" "#define GLOO_VERSION_MINOR 5" "#define GLOO_USE_CUDA 1" \
    "#define GLOO_USE_NCCL 0" "#define GLOO_USE_LIBUV 0" "#define GLOO_HAVE_TRANSPORT_TCP 1" \
    "#define GLOO_HAVE_TRANSPORT_IBVERBS 0" "#define GLOO_USE_TORCH_DTYPES 1"; do
  grep -qxF "$line" "$config" || fail "config.h lacks '$line'"
done
! grep -qE '@|cmakedefine' "$config" || fail "config.h kept a CMake placeholder"
grep -q "$good" "$out/SOURCE.txt" || fail "SOURCE.txt does not name the commit"
grep -q "gloo_headers: gloo ${good:0:12}" "$work/stdout" || fail "no summary line: $(cat "$work/stdout")"
echo "sentinel" >"$out/sentinel"

# refused COMMIT_OR_EMPTY CLONE EXPECTED: one line naming EXPECTED, a non-zero exit,
# and the layout of step 1 still there.
refused() {
  if SALT_GLOO_COMMIT=$1 "$script" "$2" "$out" >"$work/stdout" 2>"$work/stderr"; then fail "accepted: $3"; fi
  [ "$(wc -l <"$work/stderr")" = 1 ] || fail "not one line for '$3': $(cat "$work/stderr")"
  grep -qF "$3" "$work/stderr" || fail "the line does not name '$3': $(cat "$work/stderr")"
  [ -f "$out/sentinel" ] && [ -f "$out/gloo/config.h" ] || fail "the previous layout was touched ($3)"
}
# 2. An option config.h.in gained that the script has no value for.
echo "#cmakedefine01 GLOO_USE_SOMETHING_NEW" >>"$repo/gloo/config.h.in"
refused "$(commit "a new option")" "$repo" "GLOO_USE_SOMETHING_NEW"
git_ checkout -q "$good" -- gloo/config.h.in
# 3. A header ProcessGroupGloo.hpp includes now reads config.h, whose values are guessed.
printf '#pragma once\n#include "gloo/config.h"\n' >"$repo/gloo/transport/device.h"
refused "$(commit "device.h reads config.h")" "$repo" "gloo/config.h"
# 4. A commit the clone does not have; 5. no clone.
refused 1111111111111111111111111111111111111111 "$repo" "commit 1111111111111111111111111111111111111111 is not in"
refused "$good" "$work/nowhere" "no gloo clone at '$work/nowhere'"
echo "gloo_headers_layout: ok"
