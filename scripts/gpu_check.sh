#!/usr/bin/env bash
# Run ON THE GPU MACHINE (device tool), from the repository root, after
# scripts/gpu_deps.sh filled .deps/ here and the call carries it:
#   run(command="SALT_COMMIT=<sha> bash scripts/gpu_check.sh build", carry=[".deps"])  # build + ctest
#   run(command="bash scripts/gpu_check.sh gpu", carry=[".deps"])   # CUDA runs + benchmarks
# (SALT_COMMIT: the working tree travels without .git, so say which commit it is.)
# (the second call reuses build-gpu/ while the machine is warm; each fits in one
# 10-minute call). Logs go to $OUT when set, so they come back.
#
# What it uses there: the pip torch's LibTorch (2.x, CUDA) through
# CMAKE_PREFIX_PATH, CMake and ninja from the image, and the Debian 12 libraries of
# .deps unpacked under /tmp/salt-deps. Libraries the machine already has (same
# soname) are dropped from that copy, so only what it lacks comes from Debian.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
phase=${1:-build}
out=${OUT:-$root/gpu-logs}
mkdir -p "$out"
deps=/tmp/salt-deps
arch=$deps/usr/lib/x86_64-linux-gnu
build=$root/build-gpu
py=$(command -v python3)

unpack_deps() {
  [ -e "$deps/.done" ] && return
  ls .deps/*.deb >/dev/null 2>&1 || { echo "gpu_check: no .deps/*.deb: run scripts/gpu_deps.sh here and carry .deps" >&2; exit 1; }
  rm -rf "$deps"
  for f in .deps/*.deb; do dpkg -x "$f" "$deps"; done
  # Keep what the machine lacks; its own (newer) copies win. `ldconfig -p` lists
  # "<tab>libz.so.1 (libc6,x86-64) => /lib/...": the first word is the soname.
  local have; have=$(ldconfig -p | awk 'NR > 1 {print $1}')
  for f in "$arch"/*.so.*; do
    if grep -qxF "$(basename "$f")" <<<"$have"; then rm -f "$f"; fi
  done
  find "$deps" -xtype l -delete  # dev symlinks to what was dropped now resolve through the system
  touch "$deps/.done"
}

export_env() {
  export LD_LIBRARY_PATH=$arch:$arch/hdf5/serial${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export HDF5_PLUGIN_PATH=$arch/hdf5/serial/plugins
  export SALT_TEST_PYTHON=$py  # the torch + h5py cross-checks use the machine's python3
}

case $phase in
build)
  unpack_deps
  export_env
  torch_cmake=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')
  nccl_inc=$("$py" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "include"))' 2>/dev/null || true)
  flags=""
  [ -n "$nccl_inc" ] && [ -f "$nccl_inc/nccl.h" ] && flags="-DUSE_C10D_NCCL -I$nccl_inc"
  {
    echo "== machine"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
    echo "torch $("$py" -c 'import torch; print(torch.__version__, torch.version.cuda)')"
    echo "NCCL flags: ${flags:-none (nccl.h not found: GPU gradients go over Gloo)}"
    echo "commit ${SALT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
  } | tee "$out/machine.txt"
  # TorchConfig looks for CUDA; the image's nvcc says where.
  cuda=()
  command -v nvcc >/dev/null && cuda=(-DCUDAToolkit_ROOT="$(dirname "$(dirname "$(command -v nvcc)")")")
  set -o pipefail
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PREFIX_PATH="$torch_cmake;$deps/usr" "${cuda[@]}" \
    -DHDF5_ROOT="$arch/hdf5/serial" -DHDF5_PREFER_PARALLEL=OFF \
    -DCMAKE_CXX_FLAGS="$flags" 2>&1 | tee "$out/configure.log" | tail -5
  SALT_BUILD_DIR=$build SALT_JOBS=$(nproc) scripts/build.sh 2>&1 | tee "$out/build.log" | grep -E "error|FAILED|warning: unused" | head -40 || true
  "$build/app/salt" --version | tee -a "$out/machine.txt"
  (cd "$build" && ctest -j8 --timeout 300 --output-on-failure 2>&1 | tee "$out/ctest.log" | tail -40)
  ;;
gpu)
  export_env
  salt=$build/app/salt
  "$salt" --version
  [ -f data/toy/pp_output_train.h5 ] || "$salt" toydata --output_dir data/toy --num_train 60000 --num_val 10000 --num_test 20000
  # salt's full-size GN2 on the GPU, each precision, one epoch, then salt test.
  for precision in 32 bf16-mixed 16-mixed; do
    echo "== GN2 fit, cuda, precision $precision" | tee -a "$out/fit.log"
    "$salt" fit -c configs/GN2.yaml --trainer.accelerator gpu --trainer.devices 1 \
      --trainer.precision "$precision" --trainer.max_epochs 1 --force -ls "gpu_$precision" 2>&1 \
      | tail -25 | tee -a "$out/fit.log"
  done
  "$salt" test -c logs/GN2_gpu_bf16-mixed/config.yaml 2>&1 | tail -15 | tee -a "$out/fit.log"
  # Model step next to the same architecture in the machine's PyTorch.
  for precision in 32 bf16-mixed; do
    "$build/bench/bench_model" --device cuda --precision "$precision" --python "$py" --iters 20 2>&1 | tee -a "$out/bench_model.txt"
  done
  "$build/bench/bench_loader" 2>&1 | tee "$out/bench_loader.txt" | tail -20
  ;;
*)
  echo "usage: scripts/gpu_check.sh build|gpu" >&2
  exit 2
  ;;
esac
