#!/usr/bin/env bash
# The CUDA build gate, on this machine without a GPU: configures, compiles and
# links every target with the CUDA and NCCL code paths on (SALT_CUDA,
# USE_C10D_NCCL) against Debian trixie's CUDA LibTorch 2.6 (contrib's
# libtorch-cuda-dev; downloaded with its runtime closure into a scratch root by
# scripts/trixie_root.sh, nothing installed), then runs the suite on that build:
# CUDA-enabled binaries on a machine without a driver, which is also how salt-cpp
# must behave on a login node. Run it before submitting any change to GPU-facing
# code.
#
# Uses the CUDA toolkit in CUDA_HOME (default /usr/local/cuda: nvcc and headers;
# this machine kind carries CUDA 13) for compiling, and trixie's CUDA 12 runtime
# libraries (what its LibTorch links) for running. cuDNN, which trixie only
# offers as a downloader package, comes from the toolkit's lib64.
#
# Usage: scripts/check_cuda_build.sh [ctest args...]   (no args: the whole suite)
#   SALT_CUDA_DIR        scratch root (default /tmp/salt-cuda; ~1.3 GB of downloads)
#   SALT_CUDA_BUILD_ONLY=1   stop after the build and the load checks
#   build folder         build-cuda/ (git-ignored)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/trixie_root.sh"
work=${SALT_CUDA_DIR:-/tmp/salt-cuda}
cuda=${CUDA_HOME:-/usr/local/cuda}
build=$root/build-cuda
trixie_paths "$work"
start=$(date +%s)

[ -x "$cuda/bin/nvcc" ] || { echo "check_cuda_build: no nvcc in $cuda/bin (set CUDA_HOME to a CUDA toolkit)" >&2; exit 1; }
[ -e "$cuda/lib64/libcudnn.so.9" ] || { echo "check_cuda_build: no libcudnn.so.9 in $cuda/lib64 (trixie's LibTorch needs cuDNN 9)" >&2; exit 1; }

# Left out of the closure: the driver (no GPU here; LibTorch finds none, as on a
# login node), the CUDA development packages the toolkit above replaces,
# nvidia-cudnn (a downloader), and libraries only other CUDA libraries use.
no_gpu_parts='^(nvidia-|libnvidia-|glx-|libcuda1|libcudnn|libnpp|libnvjpeg|libcusolvermg|libcupti|libnvvm|libcufile|libnvblas|libaccinj|libcuinj|libnvptxcompiler|libnvfatbin|libcu\+\+-dev|libthrust|libcub-dev|libcudart-dev|node-|guile|curl|libcurl|libgl1|libglx|libglvnd|libgles|libx11|libxext|libwayland)'
if [ ! -e "$trixie_lib/libtorch_cuda.so" ] || [ ! -e "$trixie_sys/usr/include/nccl.h" ] || [ ! -e "$trixie_lib/libvulkan.so.1" ]; then
  echo "check_cuda_build: downloading Debian trixie's CUDA LibTorch 2.6 and its runtime closure into $work"
  trixie_fetch "$work" "main contrib non-free" "$no_gpu_parts" \
    libtorch-cuda-dev libgloo-cuda-dev libnccl-dev libonnx-dev ibverbs-providers
fi
trixie_check_loads "$trixie_lib/libtorch_cuda.so" "$cuda/lib64"

ldflags=$(trixie_ldflags "$cuda/lib64")
(
  exec 9>/tmp/salt-cpp-build.lock
  flock 9
  if ! grep -qF -- "$ldflags" "$build/CMakeCache.txt" 2>/dev/null; then
    # PATH: torch's FindCUDA asks the first nvcc on PATH for the version.
    PATH=$cuda/bin:$PATH cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_PREFIX_PATH="$trixie_sys/usr" -DONNX_DIR="$trixie_lib/cmake/ONNX" \
      -DCUDAToolkit_ROOT="$cuda" -DCUDA_TOOLKIT_ROOT_DIR="$cuda" -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" \
      -DSALT_REQUIRE_CUDA=ON -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >"$work/configure.log" 2>&1 \
      || { tail -30 "$work/configure.log"; echo "check_cuda_build: configure failed (log: $work/configure.log)" >&2; exit 1; }
  fi
)
grep -E "salt-cpp:|PyTorch: CUDA detected" "$work/configure.log" || true
PATH=$cuda/bin:$PATH SALT_BUILD_DIR=$build "$root/scripts/build.sh"
built=$(date +%s)

# The binary must load, carry the CUDA code paths and take LibTorch from the scratch root.
trixie_check_loads "$build/app/salt" "$cuda/lib64"
# Listed to a file first: grep -q stops reading early, and under pipefail the loader's
# SIGPIPE would fail the check now and then.
"$trixie_lib/ld-linux-x86-64.so.2" --list "$build/app/salt" > "$work/salt_libs.txt"
grep -q "libtorch_cuda.so" "$work/salt_libs.txt" \
  || { echo "check_cuda_build: salt does not link libtorch_cuda" >&2; exit 1; }
mixed=$("$trixie_lib/ld-linux-x86-64.so.2" --list "$build/app/salt" \
        | grep -E 'lib(torch|c10|gloo|onnx|c|stdc\+\+)[._]' | grep -v "$trixie_sys" || true)
[ -z "$mixed" ] || { echo "check_cuda_build: these resolve outside $trixie_sys: $mixed" >&2; exit 1; }
echo "check_cuda_build: $("$build/app/salt" --version | tr '\n' ' ')"
echo "check_cuda_build: configure + build took $((built - start)) s"
[ "${SALT_CUDA_BUILD_ONLY:-0}" = 1 ] && exit 0
# tests/gpu needs a device: the GPU machine runs it (scripts/gpu_check.sh).
cd "$build" && ctest --output-on-failure -j"${SALT_JOBS:-2}" -LE gpu "$@"
echo "check_cuda_build: done in $(($(date +%s) - start)) s"
