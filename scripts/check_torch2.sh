#!/usr/bin/env bash
# Builds salt-cpp against LibTorch 2.x and runs the whole test suite with it, on
# this CPU-only Debian 12 machine. CI builds against Debian 12's LibTorch 1.13;
# this script is how the 2.x side (the GPU machine's pip torch) is kept honest
# without a GPU.
#
# How: Debian 13 (trixie) ships LibTorch 2.6. Its packages and their runtime
# closure (including trixie's glibc, which LibTorch 2.6 needs) are downloaded with
# apt-get into a scratch root and unpacked there -- nothing is installed. The
# build finds that LibTorch through CMAKE_PREFIX_PATH, exactly as it would find a
# pip torch's, and every executable gets the scratch root's dynamic loader and an
# RPATH into it, so tests, benchmarks and the `salt` binary (also when a test
# spawns it, or Slurm does) run on LibTorch 2.6 unchanged.
#
# Usage: scripts/check_torch2.sh [ctest args...]
#   SALT_TORCH2_DIR   scratch root (default /tmp/salt-torch2)
#   build folder      build-torch2/ (git-ignored)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${SALT_TORCH2_DIR:-/tmp/salt-torch2}
build=$root/build-torch2
sys=$work/root
lib=$sys/usr/lib/x86_64-linux-gnu

# Header-only packages of the closure that must NOT shadow the host's: our code is
# compiled against Debian 12's glibc and links with its libc.so.
skip='^(libc6-dev|linux-libc-dev|libc-dev-bin|libcrypt-dev|zlib1g-dev|libexpat1-dev|libpython3.*-dev|python3.*-dev)_'
# Packages of the closure that nothing we load needs (GPU runtimes, Python, system
# tools); apt's dependency list names them but no library we run links them.
unneeded='^(libamd|libhsa|libdrm|libllvm|libpython|python|libjs-|adduser|cdebconf|debconf|dpkg|libdebian|libnewt|libpam|libsemanage|libaudit|libselinux|libsepol|perl|tar|passwd|login$|util-linux|base-|mount|libblis|libopenblas0-openmp|libopenblas0-serial)'

# libonnx-dev too: trixie's LibTorch loads trixie's libonnx, so salt's export code
# must be compiled against that ONNX's headers (Debian 12's differ in layout).
if [ ! -e "$lib/libtorch_cpu.so" ] || [ ! -d "$lib/cmake/ONNX" ]; then
  mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/etc" "$work/debs"
  echo "deb http://deb.debian.org/debian trixie main" > "$work/etc/sources.list"
  o=(-oDir::Etc::SourceList="$work/etc/sources.list" -oDir::Etc::SourceParts=/dev/null
     -oDir::State::Lists="$work/lists" -oDir::Cache::Archives="$work/archives"
     -oDir::State::Status=/dev/null)
  echo "check_torch2: downloading Debian trixie's LibTorch 2.x and its runtime closure into $work"
  apt-get "${o[@]}" update -qq
  mapfile -t pkgs < <(apt-cache "${o[@]}" depends --recurse --no-recommends --no-suggests \
      --no-conflicts --no-breaks --no-replaces --no-enhances libtorch-dev libgloo-dev libonnx-dev ibverbs-providers \
      | grep -v '^ ' | grep -v '<' | grep -Ev "$unneeded" | sort -u)
  (cd "$work/debs" && apt-get "${o[@]}" download "${pkgs[@]}" >/dev/null 2>&1)
  rm -rf "$sys"; mkdir -p "$sys"
  for f in "$work"/debs/*.deb; do
    [[ $(basename "$f") =~ $skip ]] || dpkg -x "$f" "$sys"
  done
fi
# Debian keeps libgloo in /usr/lib, not the multiarch folder.
libpath=$lib/openblas-pthread:$lib:$sys/usr/lib
missing=$("$lib/ld-linux-x86-64.so.2" --library-path "$libpath" --list "$lib/libtorch_cpu.so" 2>&1 \
          | grep -E 'not found|version .* not found' || true)
[ -z "$missing" ] || { echo "check_torch2: LibTorch 2.x in $sys cannot load: $missing" >&2; exit 1; }

# The executables run with trixie's loader and libraries first (RPATH, not
# RUNPATH, so it also covers the libraries' own dependencies); whatever trixie's
# closure lacks (yaml-cpp, HDF5, libgit2, spdlog...) comes from the host.
# --allow-shlib-undefined: the link itself uses the host's older glibc, which
# lacks symbol versions LibTorch 2.6 asks for; the loader above has them.
ldflags="-Wl,--dynamic-linker=$lib/ld-linux-x86-64.so.2 -Wl,--disable-new-dtags"
ldflags+=" -Wl,-rpath,$libpath -Wl,-rpath-link,$lib:$sys/usr/lib -Wl,--allow-shlib-undefined"
(
  exec 9>/tmp/salt-cpp-build.lock
  flock 9
  if ! grep -qF -- "$ldflags" "$build/CMakeCache.txt" 2>/dev/null \
     || ! grep -qF -- "ONNX_DIR:PATH=$lib/cmake/ONNX" "$build/CMakeCache.txt"; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_PREFIX_PATH="$sys/usr" -DONNX_DIR="$lib/cmake/ONNX" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >/dev/null
  fi
)
SALT_BUILD_DIR=$build "$root/scripts/build.sh"
# Every library LibTorch 2.x brings must come from the scratch root, never the host.
mixed=$("$lib/ld-linux-x86-64.so.2" --list "$build/app/salt" \
        | grep -E 'lib(torch|c10|gloo|onnx|c|stdc\+\+)[._]' | grep -v "$sys" || true)
[ -z "$mixed" ] || { echo "check_torch2: these resolve outside $sys: $mixed" >&2; exit 1; }
echo "check_torch2: $("$build/app/salt" --version | tr '\n' ' ')"
cd "$build" && ctest --output-on-failure -j"${SALT_JOBS:-2}" "$@"
