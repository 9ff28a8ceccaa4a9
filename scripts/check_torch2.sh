#!/usr/bin/env bash
# Builds salt-cpp against LibTorch 2.x and runs the whole test suite with it, on
# this CPU-only Debian 12 machine. CI builds against Debian 12's LibTorch 1.13;
# this script is how the 2.x side (the GPU machine's pip torch) is kept honest
# without a GPU. Debian 13 (trixie) ships LibTorch 2.6: scripts/trixie_root.sh
# downloads it with its runtime closure into a scratch root (nothing installed).
#
# Usage: scripts/check_torch2.sh [ctest args...]
#   SALT_TORCH2_DIR   scratch root (default /tmp/salt-torch2)
#   SALT_TORCH2_PY_DIR  scratch root of trixie's Python torch (default /tmp/salt-torch2-python)
#   SALT_TORCH2_PYTHON  the python3 the tests cross-check with (default: that one)
#   build folder      build-torch2/ (git-ignored)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/trixie_root.sh"
work=${SALT_TORCH2_DIR:-/tmp/salt-torch2}
build=$root/build-torch2
trixie_paths "$work"

# libonnx-dev too: trixie's LibTorch loads trixie's libonnx, so salt's export code
# must be compiled against that ONNX's headers (Debian 12's differ in layout).
if [ ! -e "$trixie_lib/libtorch_cpu.so" ] || [ ! -d "$trixie_lib/cmake/ONNX" ]; then
  echo "check_torch2: downloading Debian trixie's LibTorch 2.x and its runtime closure into $work"
  trixie_fetch "$work" main '' libtorch-dev libgloo-dev libonnx-dev ibverbs-providers
fi
trixie_check_loads "$trixie_lib/libtorch_cpu.so"

ldflags=$(trixie_ldflags)
(
  exec 9>/tmp/salt-cpp-build.lock
  flock 9
  if ! grep -qF -- "$ldflags" "$build/CMakeCache.txt" 2>/dev/null \
     || ! grep -qF -- "ONNX_DIR:PATH=$trixie_lib/cmake/ONNX" "$build/CMakeCache.txt"; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_PREFIX_PATH="$trixie_sys/usr" -DONNX_DIR="$trixie_lib/cmake/ONNX" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >/dev/null
  fi
)
SALT_BUILD_DIR=$build "$root/scripts/build.sh"
# Every library LibTorch 2.x brings must come from the scratch root, never the host.
mixed=$("$trixie_lib/ld-linux-x86-64.so.2" --list "$build/app/salt" \
        | grep -E 'lib(torch|c10|gloo|onnx|c|stdc\+\+)[._]' | grep -v "$trixie_sys" || true)
[ -z "$mixed" ] || { echo "check_torch2: these resolve outside $trixie_sys: $mixed" >&2; exit 1; }
echo "check_torch2: $("$build/app/salt" --version | tr '\n' ' ')"
# The tests' Python cross-checks run under trixie's Python torch 2.6 too (numpy 2,
# torch.load's weights_only default), unless SALT_TORCH2_PYTHON names another python3
# (/usr/bin/python3: Debian 12's torch 1.13).
SALT_TEST_PYTHON=${SALT_TORCH2_PYTHON:-}
if [ -z "$SALT_TEST_PYTHON" ]; then
  SALT_TEST_PYTHON=$(trixie_python "${SALT_TORCH2_PY_DIR:-/tmp/salt-torch2-python}")
fi
export SALT_TEST_PYTHON
printf 'check_torch2: Python cross-checks with '
"$SALT_TEST_PYTHON" -c 'import sys, torch, numpy, h5py; print(f"Python {sys.version.split()[0]}, torch {torch.__version__}, numpy {numpy.__version__}")'
cd "$build" && ctest --output-on-failure -j"${SALT_JOBS:-2}" "$@"
