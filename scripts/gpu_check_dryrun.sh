#!/usr/bin/env bash
# Rehearses scripts/gpu_check.sh here, without a GPU, so that on the GPU machine
# the only unknown is the GPU. The layout it simulates, as far as this machine can:
#   - LibTorch: the CUDA LibTorch 2.6 of scripts/check_cuda_build.sh (build-cuda/,
#     reconfigured by gpu_check.sh's own cmake line), which finds no device;
#   - the Debian 12 libraries of .deps (scripts/gpu_deps.sh), unpacked as there;
#   - python3 with torch for the PyTorch reference (here Debian's, torch 1.13);
#   - no node (a `node` on PATH that is not found) and no nvidia-smi;
#   - SALT_GPU_DRY_RUN=1: fits and benches on the CPU at tiny sizes, gpu tests listed.
# Fails unless every step ran (none skipped or failed) and every file came back.
# Usage: scripts/gpu_check_dryrun.sh [OUT_DIR]   (default: a fresh temp folder)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-$(mktemp -d /tmp/gpu_check_dryrun.XXXXXX)}
work=${SALT_CUDA_DIR:-/tmp/salt-cuda}
[ -f build-cuda/CMakeCache.txt ] || { echo "gpu_check_dryrun: run scripts/check_cuda_build.sh first (build-cuda/)" >&2; exit 1; }
[ -n "$(ls .deps/*.deb 2>/dev/null)" ] || { echo "gpu_check_dryrun: run scripts/gpu_deps.sh first (.deps/)" >&2; exit 1; }
# gpu_check.sh's cmake line, with the gate's LibTorch and linker flags (trixie's
# LibTorch needs trixie's loader here; a pip torch on the GPU machine needs none).
cache() { sed -n "s/^$1:[A-Z]*=//p" build-cuda/CMakeCache.txt; }
args="-DONNX_DIR=$(cache ONNX_DIR) -DCUDA_TOOLKIT_ROOT_DIR=$(cache CUDA_TOOLKIT_ROOT_DIR)"
args+=" -DCMAKE_CUDA_COMPILER=$(cache CMAKE_CUDA_COMPILER) -DSALT_REQUIRE_CUDA=ON"
# No node there: a `node` first on PATH that is not found (node lives in /usr/bin here,
# with everything else, so the folder cannot simply be dropped from PATH).
shim=$(mktemp -d /tmp/gpu_check_dryrun_bin.XXXXXX)
printf '#!/bin/sh\necho "node: not found" >&2\nexit 127\n' >"$shim/node"
chmod +x "$shim/node"
path_no_node=$shim:$PATH
cuda=$(dirname "$(dirname "$(cache CMAKE_CUDA_COMPILER)")")
env PATH="$cuda/bin:$path_no_node" SALT_GPU_DRY_RUN=1 SALT_GPU_BUILD_DIR="$root/build-cuda" \
  SALT_GPU_PYTHON=/usr/bin/python3 SALT_GPU_TORCH_PREFIX="$work/root/usr" SALT_GPU_DEPS_ON_PREFIX=0 \
  SALT_GPU_CMAKE_ARGS="$args -DCMAKE_EXE_LINKER_FLAGS='$(cache CMAKE_EXE_LINKER_FLAGS)'" \
  SALT_GPU_BUDGET_S=3000 \
  bash scripts/gpu_check.sh "$out"
echo "gpu_check_dryrun: files in $out:"
ls -la "$out"
n=$(find "$out" -type f | wc -l)
missing=""
for f in preflight.txt build.log ctest.log fit.log bench.txt summary.txt; do [ -s "$out/$f" ] || missing+=" $f"; done
problems=$(grep -E "skipped|FAILED|exit [1-9]|failed" "$out/summary.txt" || true)
if [ -n "$missing" ] || [ "$n" -gt 8 ] || [ -n "$problems" ]; then
  echo "gpu_check_dryrun: FAILED: missing:${missing:- none}; $n files (8 at most); problems: ${problems:-none}" >&2
  exit 1
fi
echo "gpu_check_dryrun: every step ran, $n files"
