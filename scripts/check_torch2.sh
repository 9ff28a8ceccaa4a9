#!/usr/bin/env bash
# Compiles (syntax only) every source against LibTorch 2.x headers, without a GPU
# machine: Debian trixie's libtorch-dev (2.6) is downloaded with apt-get into a
# scratch folder (nothing is installed) and each translation unit is checked with
# g++ -fsyntax-only. Catches 1.13-vs-2.x API differences that would break the GPU
# build. Usage: scripts/check_torch2.sh [files...]   (default: lib/ bench/ tests/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${SALT_TORCH2_DIR:-/tmp/salt-torch2}
mkdir -p "$work/lists" "$work/archives/partial" "$work/etc"
echo "deb http://deb.debian.org/debian trixie main" > "$work/etc/sources.list"
o=(-oDir::Etc::SourceList="$work/etc/sources.list" -oDir::Etc::SourceParts=/dev/null
   -oDir::State::Lists="$work/lists" -oDir::Cache::Archives="$work/archives")
if [ ! -d "$work/root/usr/include/torch" ]; then
  apt-get "${o[@]}" update -qq
  (cd "$work" && apt-get "${o[@]}" download libtorch-dev 2>/dev/null)
  dpkg -x "$work"/libtorch-dev_*.deb "$work/root"
fi
inc=$work/root/usr/include
cd "$root"
files=("$@")
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(ls lib/*/*.cpp bench/*.cpp tests/*/*.cpp)
failed=0
for f in "${files[@]}"; do
  if ! out=$(g++ -std=c++17 -fsyntax-only -D_GLIBCXX_USE_CXX11_ABI=1 -DSALT_SOURCE_DIR='"x"' -DSALT_BINARY='"x"' \
               -I"$inc" -I"$inc/torch/csrc/api/include" -Ilib -Itests -I/usr/include/hdf5/serial "$f" 2>&1); then
    echo "== $f"; echo "$out" | grep -E "error" | head -5; failed=1
  fi
done
[ $failed -eq 0 ] && echo "all ${#files[@]} files compile against $(grep -m1 -o '"[0-9.]*"' "$inc/torch/csrc/api/include/torch/version.h" || echo 'LibTorch 2.x') headers"
exit $failed
