#!/usr/bin/env bash
# The GPU check in ONE device call (the machine is given back 30 s after a call,
# so nothing may rely on a second one). Run ON THE GPU MACHINE from the
# repository root, after scripts/gpu_deps.sh filled .deps/ here:
#
#   run(command="SALT_COMMIT=<sha> bash scripts/gpu_check.sh", carry=[".deps", ".saltpy"], timeout_s=600)
#
# (SALT_COMMIT: the working tree travels without .git, so say which commit it is.)
# It fits in 9 minutes on 16 cores, printing each step's figures as it goes and
# writing at most 8 files into $OUT (or the folder given as $1):
#   preflight.txt  versions of torch, CUDA, NCCL, cmake, the card
#   build.log      configure + build of only what it runs
#   ctest.log      the `gpu`-labelled tests (tests/gpu)
#   (issue 54, first after the build) salt itself: salt's own `salt fit` (carried in .saltpy,
#                  scripts/salt_site.py) next to salt-cpp's, interleaved (bench/fit_vs_salt.sh),
#                  into fit.log; the packed PyTorch GN2 next to the padded one, eager and
#                  compiled (bench/python/gn2_packed.py), into bench.txt
#   fit.log        salt's GN2 (batch 4000, salt's size) in 32, bf16-mixed (without and with host
#                  twins, eager instead of CUDA graphs, with flash attention's kernels, without
#                  the copy stream) and 16-mixed (as graphs and eager), then salt test,
#                  then scripts/lightning_checks.py on the bf16 run's checkpoints
#   bench.txt      the model step next to the same model in the machine's PyTorch; the loader at 16 threads
#   profile.txt    the kernels of one GN2 step by total time (ncu), each with its DRAM bytes,
#                  bandwidth and share of the card's memory roofline, and per kind of work
#                  (scripts/ncu_summary.py), with salt-cpp's short-jet attention kernel (the
#                  default) and with flash attention's
#   (the throughput step's ThroughputMonitor rates and MFU go to summary.txt)
#   seeds.log      salt and salt-cpp over 3 seeds each, side by side (only where SALT_GPU_ONLY
#                  names "seeds": GN2 at salt's size, 500,000 jets, ~7 minutes)
#   summary.txt    one table: every figure with the commit and the machine
# Each step has a deadline (SALT_GPU_BUDGET_S, default 540 s for the whole): a step
# that would start too late is skipped with a line saying so, and the summary is
# written whatever happened.
#
# Settings (environment):
#   SALT_GPU_PYTHON     python with the CUDA torch (default: python3)
#   SALT_GPU_BUILD_DIR  build folder (default build-gpu/)
#   SALT_GPU_CMAKE_ARGS extra cmake arguments
#   SALT_GPU_TORCH_PREFIX  LibTorch's CMake prefix (default: asked from the python's torch)
#   SALT_GPU_DEPS_ON_PREFIX=0  build against the machine's own libraries only (.deps still unpacked)
#   SALT_GPU_ONLY       run only the steps whose names start with one of these words, '_'
#                       standing for a space (e.g. "build bench profile fit_bf16-mixed_eager": a
#                       second, shorter call in the same lease; without "build", the binaries
#                       the first call built)
#   SALT_GPU_BENCH_QUICK=1  the bench step times salt-cpp's step alone (bench_model
#                       --gpu-suite --quick: ~30 s instead of ~100, no PyTorch)
#   SALT_GPU_DRY_RUN=1  rehearse on a machine without a GPU (scripts/gpu_check_dryrun.sh):
#                       the fits and benches run on the CPU at tiny sizes, the gpu
#                       tests are listed, not run
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-${OUT:-$root/gpu-logs}}
mkdir -p "$out"
py=${SALT_GPU_PYTHON:-python3}
build=${SALT_GPU_BUILD_DIR:-$root/build-gpu}
dry=${SALT_GPU_DRY_RUN:-0}
budget=${SALT_GPU_BUDGET_S:-540}
commit=${SALT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
t0=$(date +%s)
deps=/tmp/salt-deps
arch=$deps/usr/lib/x86_64-linux-gnu
summary=$out/summary.txt
: >"$summary"

elapsed() { echo $(($(date +%s) - t0)); }
note() { echo "$*" | tee -a "$summary"; }
# wanted NAME: whether SALT_GPU_ONLY (if set) lets the step NAME run.
wanted() {
  [ -z "${SALT_GPU_ONLY:-}" ] && return 0
  local w
  for w in $SALT_GPU_ONLY; do [[ $1 == "${w//_/ }"* ]] && return 0; done  # '_' stands for a space
  return 1
}
# step NAME SECONDS_NEEDED: false (and a line in the summary) when the step would
# end past the budget.
step() {
  local left=$((budget - $(elapsed)))
  echo "== [$(elapsed) s] $1"
  wanted "$1" || { echo "$1: not in SALT_GPU_ONLY"; return 1; }
  if [ "$left" -lt "$2" ]; then
    note "$1: skipped, $left s left of the budget and it needs ~$2 s"
    return 1
  fi
}

# ---- preflight ----
step preflight 5
{
  echo "commit $commit"
  echo "date $(date -u +%FT%TZ)"
  echo "host $(hostname) $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "cpu topology: $(lscpu 2>/dev/null | grep -E '^(Thread|Core|Socket)' | tr -s ' ' | tr '\n' ';')"
  # issue 57: whether this CPU multiplies bf16 natively (AVX-512 BF16, AMX)
  echo "cpu $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1); bf16 flags:" \
    "$(grep -oE 'avx512_bf16|amx_bf16|avx512f' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
  else
    echo "nvidia-smi: not found"
  fi
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "gpus", torch.cuda.device_count())' 2>&1
  "$py" -c 'import torch; print("nccl", ".".join(map(str, torch.cuda.nccl.version())))' 2>&1 | tail -1
  echo "cmake $(cmake --version | head -1 | awk '{print $3}'), ninja $(ninja --version 2>/dev/null || echo none), nvcc $(nvcc --version 2>/dev/null | tail -2 | head -1 || echo none)"
  echo "node: $(command -v node || echo none)"
} 2>&1 | tee "$out/preflight.txt"
device=cuda
[ "$dry" = 1 ] && device=cpu

# ---- Debian 12 libraries carried in .deps (the machine has no package registry) ----
unpack_deps() {
  [ -e "$deps/.done" ] && return 0
  ls .deps/*.deb >/dev/null 2>&1 || { echo "gpu_check: no .deps/*.deb: run scripts/gpu_deps.sh here and carry .deps" >&2; return 1; }
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
unpack_deps || { note "deps: .deps missing"; exit 1; }
export LD_LIBRARY_PATH=$arch:$arch/hdf5/serial${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export HDF5_PLUGIN_PATH=$arch/hdf5/serial/plugins
export SALT_TEST_PYTHON=$py  # the torch + h5py cross-checks use the machine's python3

# ---- build only what runs below ----
built=0
if step build 150; then
  torch_prefix=${SALT_GPU_TORCH_PREFIX:-$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')}
  # pip's nvidia-nccl wheel carries nccl.h; cmake/Cuda.cmake finds it through NCCL_ROOT.
  nccl_root=$("$py" -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
  [ -n "$nccl_root" ] && export NCCL_ROOT=$nccl_root
  cuda=()
  command -v nvcc >/dev/null && cuda=(-DCUDAToolkit_ROOT="$(dirname "$(dirname "$(command -v nvcc)")")")
  prefix=$torch_prefix
  hdf5=()
  if [ "${SALT_GPU_DEPS_ON_PREFIX:-1}" = 1 ]; then
    prefix+=";$deps/usr"
    hdf5=(-DHDF5_ROOT="$arch/hdf5/serial" -DHDF5_PREFER_PARALLEL=OFF)
  fi
  # Gloo's headers, which pip's LibTorch lacks (scripts/gloo_headers.sh via gpu_deps.sh);
  # without them salt-cpp has no Gloo, and processes cannot share the card.
  gloo=()
  [ -f .deps/gloo-include/gloo/algorithm.h ] && gloo=(-DSALT_GLOO_INCLUDE_DIR="$root/.deps/gloo-include")
  eval "extra=(${SALT_GPU_CMAKE_ARGS:-})"  # may hold quoted arguments with spaces
  b0=$(date +%s)
  # The benches only for the steps that run them (a shorter call builds less).
  targets=(salt)
  { wanted "bench model" || wanted profile; } && targets+=(bench_model)
  wanted loader && targets+=(bench_loader)
  # tests/gpu exists only in a build against a CUDA LibTorch. Not `grep -q`: it
  # stops reading at the match, and under pipefail ninja's SIGPIPE then fails the
  # test once the listing outgrows a pipe's 64 KB (95d5894 on the H200: not built).
  add_gpu_tests() {
    if ninja -C "$build" -t targets all 2>/dev/null | grep -c "^test_gpu:" >/dev/null; then
      [[ " ${targets[*]} " == *" test_gpu "* ]] || targets+=(test_gpu)
    fi
  }
  {
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSALT_BUILD_BENCH=ON \
      -DCMAKE_PREFIX_PATH="$prefix" "${cuda[@]}" "${hdf5[@]}" "${gloo[@]}" "${extra[@]}" &&
    add_gpu_tests &&
    # -k 0: one call must report every file that fails to compile, not the first
    cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" -- -k 0
  } >"$out/build.log" 2>&1 && built=1
  # salt-cpp's own CUDA kernels (lib/models/kernels/cuda, nvcc) are the one part this
  # machine compiles that the CUDA build gate here cannot fully check: if they
  # failed, build again without them, so that the rest of the check still runs.
  if [ $built = 0 ] && grep -qE "salt_cuda_kernels|CMAKE_CUDA|models/kernels/cuda/|enable_language" "$out/build.log"; then
    note "build: failed in salt-cpp's CUDA kernels; again with -DSALT_CUDA_KERNELS=OFF"
    { cmake -S . -B "$build" -DSALT_CUDA_KERNELS=OFF &&
      add_gpu_tests &&
      cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" -- -k 0; } >>"$out/build.log" 2>&1 && built=1
  fi
  grep -E "salt-cpp:|CUDA detected|error|FAILED" "$out/build.log" | head -40
  note "build: $([ $built = 1 ] && echo ok || echo FAILED) in $(($(date +%s) - b0)) s (log: build.log)"
  if [ $built = 1 ]; then
    "$build/app/salt" --version | tee -a "$out/preflight.txt"
    note "build: $(grep '^data parallel:' "$out/preflight.txt" | tail -1)"  # Gloo in or not (SALT_GLOO_INCLUDE_DIR)
  fi
fi
# A later call in the same lease that leaves the build out (SALT_GPU_ONLY) runs the
# binaries the first one built: the device keeps ignored build outputs between calls.
if [ $built = 0 ] && ! wanted build && [ -x "$build/app/salt" ]; then
  built=1
  note "build: not in SALT_GPU_ONLY; the binaries already in $build"
fi
[ $built = 1 ] || { note "nothing to run without a build"; exit 1; }
salt=$build/app/salt

# ---- the toy data of every fit below (GN2 at salt's size) ----
if [ "$dry" = 1 ]; then
  batch=250 ntrain=1000 nval=250 ntest=250 workers=2
  size=(-c configs/GN2_cpu.yaml)
else
  batch=4000 ntrain=160000 nval=40000 ntest=40000 workers=15
  size=()
fi
data=$root/data/gpu
if step "toy data" 60; then
  [ -f "$data/pp_output_train.h5" ] ||
    "$salt" toydata --output_dir "$data" --num_train $ntrain --num_val $nval --num_test $ntest >>"$out/fit.log" 2>&1
fi

# ---- salt itself on the card (issue 54): salt's own `salt fit` with its GN2.yaml next to
# salt-cpp's, same data, batch, precision, epochs and workers, interleaved
# (bench/fit_vs_salt.sh). salt and the pure-Python packages the machine lacks travel in
# .saltpy/site (scripts/salt_site.py, carried); the machine's torch and Lightning run it. ----
salt_site=$root/.saltpy/site
# vs_salt STEP ATTN ROUNDS: bench/fit_vs_salt.sh with salt's attention ATTN ('' for its
# config's), its log into fit.log, its lines into the summary.
vs_salt() {
  if [ ! -d "$salt_site/salt" ]; then
    note "$1: no $salt_site (run scripts/salt_site.py here and carry .saltpy)"
    return
  fi
  local vs work=/tmp/fit_vs_salt_${2:-config}
  if [ "$dry" = 1 ]; then vs=(BATCH=250 EPOCHS=2 ROUNDS=1 WORKERS=2 ACCELERATOR=cpu PRECISION=32
                               "CPP_CONFIGS=-c configs/GN2.yaml -c configs/GN2_cpu.yaml")
  else vs=(BATCH=$batch EPOCHS=4 ROUNDS=$3 WORKERS=$workers ACCELERATOR=gpu PRECISION=bf16-mixed); fi
  [ -n "$2" ] && vs+=(SALT_ATTN="$2")
  # what the budget leaves, less a minute for the steps after (salt on this CPU: ~100 s an epoch)
  local limit=$((budget - $(elapsed) - 60))
  [ "$dry" = 1 ] && limit=900
  env "${vs[@]}" SALT_BIN="$salt" SALT_PY="${SALT_GPU_SALT_PY:-$py}" PYTHONPATH="$salt_site" \
    timeout "$limit" bench/fit_vs_salt.sh "$data" "$work" >/dev/null 2>&1
  note "$1 (bench/fit_vs_salt.sh${2:+, attn_type $2 in salt}): exit $?"
  { cat "$work/fit_vs_salt.log"; for f in "$work"/*.log; do
      echo "== $f"; grep -vE "it/s]|^\s*$" "$f" | tail -40; done; } >>"$out/fit.log" 2>&1
  tee -a "$summary" <"$work/fit_vs_salt.log"
}
step "salt itself" 100 && vs_salt "salt itself" "" "${SALT_GPU_SALT_ROUNDS:-1}"
# salt with its attention on torch's memory-efficient SDPA kernel (salt's default attn_type,
# where GN2.yaml's flash-varlen needs the flash_attn package the machine lacks).
step "salt meff" 100 && vs_salt "salt meff" torch-meff "${SALT_GPU_SALT_ROUNDS:-1}"


# ---- a packed PyTorch GN2 doing salt-cpp's work (valid tokens only, factorised heads)
# next to the padded one, eager and compiled, interleaved (bench/python/gn2_packed.py) ----
if step "packed" 150; then
  if [ "$dry" = 1 ]; then pk=(--device cpu --batch 200 --iters 2 --rounds 3)
  else pk=(--device cuda --precision bf16-mixed --batch 4000 --iters 20 --rounds 3); fi
  echo "== bench/python/gn2_packed.py ${pk[*]}" >>"$out/bench.txt"
  timeout $((budget - $(elapsed) - 60)) "$py" bench/python/gn2_packed.py "${pk[@]}" >>"$out/bench.txt" 2>&1
  note "packed PyTorch baseline (bench/python/gn2_packed.py): exit $?"
  sed -n '/^== bench\/python\/gn2_packed.py/,$p' "$out/bench.txt" | grep -vE "^RESULT|^== " | tail -14 | tee -a "$summary"
fi

# ---- the gpu tests ----
if step "gpu tests" 100; then
  export OMP_NUM_THREADS=4
  if [ "$dry" = 1 ]; then
    (cd "$build" && ctest -L gpu -N) >"$out/ctest.log" 2>&1
    note "gpu tests: dry run, listed only: $(grep -c 'Test *#' "$out/ctest.log") test(s)"
  else
    # -V: each gtest case's line in ctest.log (the label is one ctest entry, test_gpu).
    (cd "$build" && timeout 100 ctest -L gpu -V --timeout 90) >"$out/ctest.log" 2>&1
    note "gpu tests: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1);" \
      "$(grep -c '\[       OK \]' "$out/ctest.log") case(s) ok, failed: $(grep -oE '\[  FAILED  \] Gpu\.[A-Za-z0-9_]+' \
        "$out/ctest.log" | sort -u | sed 's/.*Gpu\.//' | tr '\n' ' ')"
    grep -q "NOT_BUILT" "$out/ctest.log" && note "gpu tests: test_gpu was not built (see build.log)"
  fi
  unset OMP_NUM_THREADS
fi

# ---- the step next to PyTorch (first after the tests: the figure issue 32 asks for) ----
quick=()
[ "${SALT_GPU_BENCH_QUICK:-0}" = 1 ] && quick=(--quick)
if step "bench model" $([ ${#quick[@]} = 1 ] && echo 40 || echo 90); then
  if [ "$dry" = 1 ]; then
    "$build/bench/bench_model" --gpu-suite "${quick[@]}" --batch 100 --python "$py" --iters 1 >>"$out/bench.txt" 2>&1
  else
    "$build/bench/bench_model" --device cuda --precision bf16-mixed --python "$py" --iters 20 --gpu-suite \
      "${quick[@]}" >>"$out/bench.txt" 2>&1
  fi
  note "bench_model: exit $?"
  grep -E "^  (salt-cpp|PyTorch)" "$out/bench.txt" | tail -8 | tee -a "$summary"
  grep -E "^    (short-varlen|segment-sum kernel|static rows, eager|CUDA graphs):" "$out/bench.txt" | tee -a "$summary"
fi
# ---- which kernels take the step's time (ncu: each kernel's duration and the DRAM
# bytes it read and wrote, against the card's bandwidth: scripts/ncu_summary.py);
# the default step (salt-cpp's short-jet attention kernel) ----
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" in
  *H200*) peak_gbs=4800 ;;
  *H100*PCIe*) peak_gbs=2000 ;;
  *H100*) peak_gbs=3350 ;;
  *A100*80GB*) peak_gbs=2039 ;;
  *) peak_gbs= ;;
esac
ncu_metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
if [ "$dry" != 1 ] && [ -n "$ncu" ] && step "profile" 60; then
  timeout 120 "$ncu" --profile-from-start off --clock-control none --metrics "$ncu_metrics" --csv \
    --page raw "$build/bench/bench_model" --device cuda --precision bf16-mixed --profile-steps 1 \
    >/tmp/salt_profile.csv 2>/tmp/salt_profile.err
  note "profile (ncu, one bf16 GN2 step at batch 4000): exit $?"
  "$py" scripts/ncu_summary.py /tmp/salt_profile.csv 40 ${peak_gbs:+--peak-gbs "$peak_gbs"} >"$out/profile.txt" 2>&1 ||
    tail -5 /tmp/salt_profile.err >>"$out/profile.txt"
  head -14 "$out/profile.txt" | tee -a "$summary"
  sed -n '/^by kind/,$p' "$out/profile.txt" | tee -a "$summary"
fi
# The same step with flash attention's kernels in place of salt-cpp's short-jet
# kernel (SALT_SHORT_ATTENTION=0, models/kernels/short_attention.h), appended to profile.txt.
if [ "$dry" != 1 ] && [ -n "$ncu" ] && step "profile flash" 45; then
  SALT_SHORT_ATTENTION=0 timeout 120 "$ncu" --profile-from-start off --clock-control none \
    --metrics "$ncu_metrics" --csv --page raw "$build/bench/bench_model" --device cuda \
    --precision bf16-mixed --profile-steps 1 >/tmp/salt_profile_flash.csv 2>/tmp/salt_profile_flash.err
  note "profile flash (ncu, the same step, SALT_SHORT_ATTENTION=0): exit $?"
  { echo; echo "== SALT_SHORT_ATTENTION=0"; "$py" scripts/ncu_summary.py /tmp/salt_profile_flash.csv 40 \
      ${peak_gbs:+--peak-gbs "$peak_gbs"} 2>&1 ||
    tail -5 /tmp/salt_profile_flash.err; } >/tmp/salt_profile_flash.txt
  head -10 /tmp/salt_profile_flash.txt | tail -8 | tee -a "$summary"
  cat /tmp/salt_profile_flash.txt >>"$out/profile.txt"
fi

# ---- GN2 at salt's size: 32, bf16-mixed, 16-mixed, then salt test ----
fit() {  # [FIT_TAG=name] [FIT_DATA=dir] fit PRECISION EXTRA_ARGS...   (the run: logs/GN2_gpu_<name, else PRECISION>)
  local p=$1 tag=${FIT_TAG:-$1} log data=${FIT_DATA:-$data}
  shift
  log=$(mktemp)
  echo "== GN2 fit, $device, precision $p" >>"$out/fit.log"
  "$salt" fit -c configs/GN2.yaml "${size[@]}" --force -n GN2_gpu -ls "$tag" -oc \
    --data.train_file "$data/pp_output_train.h5" --data.val_file "$data/pp_output_val.h5" \
    --data.test_file "$data/pp_output_test_ttbar.h5" --data.norm_dict "$data/norm_dict.yaml" \
    --data.class_dict "$data/class_dict.yaml" --data.batch_size $batch --data.num_workers $workers \
    --data.num_train -1 --data.num_val -1 --trainer.max_epochs 2 --trainer.precision "$p" \
    --trainer.accelerator "$([ "$device" = cuda ] && echo gpu || echo cpu)" "$@" >"$log" 2>&1
  local rc=$?
  cat "$log" >>"$out/fit.log"
  local speed res
  speed=$(grep -oE "trained [0-9]+ jets in [0-9.]+ s: [0-9]+ jets/s" "$log" | tail -1)
  res=$(grep -E "train epoch 1: " "$log" | tail -1 | sed 's/.*train epoch 1: //')
  grep -E "steps ahead of the card|CUDA graphs|SALT_CUDA_GRAPHS" "$log" | sed -E 's/^.*(info|warning): /  /' | tee -a "$summary"
  [ $rc = 0 ] || grep -E "salt: error:" "$log" | tail -1 | sed 's/^/  /' | tee -a "$summary"  # why, in the summary too
  rm -f "$log"
  note "fit $tag: exit $rc; $speed; epoch 1: $res"
  sed -n '/attention_kernels:/,/stages:/p' "logs/GN2_gpu_$tag/metadata.yaml" 2>/dev/null | grep -v "stages:" |
    tr -s ' \n' ' ' | sed 's/^/  /' | tee -a "$summary"
  # What the graphs did (issue 69: metadata's `used`, counts, or `why` not).
  awk '/^  cuda_graphs:/{f=1;printf "  cuda_graphs:";next} f&&/^    /{sub(/^ +/, ""); printf " %s;", $0; next} f{exit}' \
    "logs/GN2_gpu_$tag/metadata.yaml" 2>/dev/null | tee -a "$summary"
  echo | tee -a "$summary"
}
# --trainer.devices [0] and 1 both select the card (issue 32's placement check).
card0="[0]"
[ "$device" = cuda ] || card0=1
# With twins (the default). SALT_MAX_STEPS_AHEAD=2 makes its log say which side
# bounds the fit: a step that never waits for the card two steps back is the
# host's (at 95d5894: 0 waits in 80 steps, so the host, not running ahead, is what
# the twins slow down).
step "fit bf16-mixed" 45 && SALT_MAX_STEPS_AHEAD=2 fit bf16-mixed --trainer.devices "$card0"
# The training steps eagerly (SALT_CUDA_GRAPHS=0): CUDA graphs (training/step/step_graphs.h)
# are the default since call M (13d010b), where a 2-million-jet fit's epoch took 6.35 s
# as graphs against 10.88 s eager; the default fits above log how many graphs and replays.
step "fit bf16-mixed eager" 45 && SALT_CUDA_GRAPHS=0 FIT_TAG=bf16-eager fit bf16-mixed --trainer.devices 1
# salt-cpp's vertexing edge kernels (SALT_SEGMENT_SUM_KERNEL=1, off until a card has run
# them): the gradients' segment sums, which save 1 GB of float32 casts, and the edge net's
# first layer (gathers, add, ReLU) in one pass with its mask folded into those sums.
step "fit bf16-mixed segment-sum" 45 && SALT_SEGMENT_SUM_KERNEL=1 FIT_TAG=bf16-segsum fit bf16-mixed --trainer.devices 1
# salt-cpp's norm-and-cast kernel for the pre-norms (SALT_NORM_CAST_KERNEL=1, off until
# a card has run it): issue 68 item 2's first fusion, a float32 row and its cast per norm.
step "fit bf16-mixed norm-cast" 45 && SALT_NORM_CAST_KERNEL=1 FIT_TAG=bf16-normcast fit bf16-mixed --trainer.devices 1
# Issue 54 item 6: two fits with the same seed and `deterministic: true` give bitwise
# equal weights and optimizer state (compared tensor by tensor with the machine's torch),
# and what deterministic mode costs: its epoch 1 against the default fit's above.
# same_checkpoints RUN_A RUN_B LABEL: whether the two runs' last checkpoints hold bitwise
# equal weights and AdamW moments, as a line in the summary.
same_checkpoints() {
  "$py" - "$1" "$2" "$3" <<'PY' 2>&1 | tee -a "$summary"
import glob, sys, torch
def last(run):
    files = sorted(glob.glob(f"{run}/ckpts/*.ckpt")) or sorted(glob.glob(f"{run}/**/*.ckpt", recursive=True))
    return files[-1]
def tensors(x, path=""):
    if torch.is_tensor(x): yield path, x
    elif isinstance(x, dict):
        for k, v in x.items(): yield from tensors(v, f"{path}.{k}")
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x): yield from tensors(v, f"{path}[{i}]")
a, b = (torch.load(last(r), map_location="cpu", weights_only=False) for r in sys.argv[1:3])
ta = dict(tensors({"state_dict": a["state_dict"], "optimizer_states": a["optimizer_states"]}))
tb = dict(tensors({"state_dict": b["state_dict"], "optimizer_states": b["optimizer_states"]}))
diff = [k for k in ta if k not in tb or ta[k].shape != tb[k].shape or not torch.equal(ta[k], tb[k])]
print(f"{sys.argv[3]}: {len(ta)} tensors in {last(sys.argv[1]).split('/')[-1]}, {len(diff)} differ"
      + (f" (first: {diff[0]})" if diff else ": bitwise equal"))
PY
}
if step "deterministic" 40; then
  for r in 1 2; do FIT_TAG=det$r fit bf16-mixed --trainer.devices 1 --trainer.deterministic true; done
  same_checkpoints logs/GN2_gpu_det1 logs/GN2_gpu_det2 "deterministic (eager: graphs stay off by default there)"
fi
# Deterministic mode with CUDA graphs asked for: once bitwise equal on a card, graphs can
# be the default in deterministic runs too (training/step/train_step.cpp).
if step "deterministic graphs" 40; then
  for r in 1 2; do
    SALT_CUDA_GRAPHS=1 FIT_TAG=detg$r fit bf16-mixed --trainer.devices 1 --trainer.deterministic true
  done
  same_checkpoints logs/GN2_gpu_detg1 logs/GN2_gpu_detg2 "deterministic with CUDA graphs"
fi
# Issue 54 item 5: a fit over 2 million jets; its steady epoch next to the bench's step,
# and the share of the epoch spent waiting for data (salt-cpp's epoch line says it).
if step "scale" 120; then
  big=$root/data/gpu_2m
  if [ "$dry" = 1 ]; then nbig=20000; else nbig=2000000; fi
  [ -f "$big/pp_output_train.h5" ] || "$salt" toydata --output_dir "$big" --num_train $nbig --num_val 100000 \
    --num_test 1000 >>"$out/fit.log" 2>&1
  FIT_TAG=scale FIT_DATA=$big fit bf16-mixed --trainer.devices 1
  grep -E "info: (train|val) epoch [0-9]+:" "$out/fit.log" | tail -4 | sed 's/^.*info: /  /' | tee -a "$summary"
fi
# The same with 4 loader workers instead of 15: at call L the loader kept up (0.4 % of the
# epoch waiting) while the fit reached 66-73 % of the step; whether 15 busy decoding
# threads slow the one thread that issues the step (16 cores, maybe 8 with two threads each).
if step "scale 4 workers" 60; then
  FIT_TAG=scale-w4 FIT_DATA=$root/data/gpu_2m fit bf16-mixed --trainer.devices 1 --data.num_workers 4
  grep -E "info: train epoch [0-9]+:" "$out/fit.log" | tail -2 | sed 's/^.*info: /  /' | tee -a "$summary"
fi
# The 2-million-jet fit eagerly (SALT_CUDA_GRAPHS=0), against the default's graphs above.
if step "scale eager" 50; then
  SALT_CUDA_GRAPHS=0 FIT_TAG=scale-eager FIT_DATA=$root/data/gpu_2m fit bf16-mixed --trainer.devices 1
  grep -E "info: train epoch [0-9]+:" "$out/fit.log" | tail -2 | sed 's/^.*info: /  /' | tee -a "$summary"
fi
# Where the fit's host time goes at scale (Lightning's SimpleProfiler: each action's
# host time; with the card behind, a step's launches show where the host waits).
if step "scale profile" 50; then
  FIT_TAG=scale-prof FIT_DATA=$root/data/gpu_2m fit bf16-mixed --trainer.devices 1 --trainer.profiler simple
  grep -E "info: train epoch [0-9]+:" "$out/fit.log" | tail -2 | sed 's/^.*info: /  /' | tee -a "$summary"
  prof=$(ls logs/GN2_gpu_scale-prof/fit*.txt 2>/dev/null | head -1)
  [ -n "$prof" ] && grep -vE "^\s*$|^-+$" "$prof" | head -24 | tee -a "$summary"
fi
# Issue 54 item 8: `--trainer.devices [0,0]`, two processes on the one card over Gloo
# (the launcher picks it: NCCL refuses two ranks on a device), against one process with
# the same global batch (accumulate_grad_batches 2, as tests/parallel/fit_dist_test.cpp on
# the CPU); fp32 and deterministic, so that only the gradients' averaging may differ.
if step "two processes" 60; then
  half=$((batch / 2))
  # One host thread each (a GPU fit's default anyway): on the CPU (dry run) two threads
  # against one sum in another order, and Adam turns that into 5e-3 on a zero-started bias.
  OMP_NUM_THREADS=1 FIT_TAG=one-proc fit 32 --trainer.devices 1 --data.batch_size $half --trainer.accumulate_grad_batches 2 \
    --trainer.max_epochs 1 --trainer.deterministic true --data.num_workers 6
  OMP_NUM_THREADS=1 FIT_TAG=two-proc fit 32 --trainer.devices "[0,0]" --data.batch_size $half --trainer.max_epochs 1 \
    --trainer.deterministic true --data.num_workers 6
  grep -E "data parallel:|one card to several" "$out/fit.log" | tail -2 | sed 's/^.*info: /  /' | tee -a "$summary"
  "$py" - logs/GN2_gpu_one-proc logs/GN2_gpu_two-proc <<'PY' 2>&1 | tee -a "$summary"
import glob, sys, torch
def last(run):
    return sorted(glob.glob(f"{run}/ckpts/*.ckpt"))[-1]
a, b = (torch.load(last(r), map_location="cpu", weights_only=False) for r in sys.argv[1:3])
worst, name, largest, equal = 0.0, "", 0.0, 0
floats = {k: v for k, v in a["state_dict"].items() if v.is_floating_point()}
for k, v in floats.items():
    d = (v - b["state_dict"][k]).abs().max().item()
    equal += d == 0
    largest = max(largest, d)
    if d / max(v.abs().max().item(), 1e-12) > worst: worst, name = d / max(v.abs().max().item(), 1e-12), k
print(f"two processes on one card: global_step {b['global_step']} (one process: {a['global_step']}); "
      f"{equal} of {len(floats)} float tensors bitwise equal; largest difference {largest:.2e}, "
      f"relative to its tensor's largest weight {worst:.2e} ({name}); "
      + " vs ".join(last(r).split("/")[-1] for r in sys.argv[1:3]))
PY
fi
step "fit 16-mixed eager" 45 && SALT_CUDA_GRAPHS=0 FIT_TAG=16-eager fit 16-mixed --trainer.devices 1
# With flash attention's kernels in place of salt-cpp's short-jet kernel (the
# default since 8f92c71's call: models/kernels/short_attention.h).
step "fit bf16-mixed flash" 45 && SALT_SHORT_ATTENTION=0 FIT_TAG=bf16-flash fit bf16-mixed --trainer.devices 1
# With the batches copied on the compute stream, as before the copy stream
# (training/step/batch_device.h): what the copies' overlap with the step gives a fit.
step "fit bf16-mixed no copy stream" 45 && SALT_COPY_STREAM=0 FIT_TAG=bf16-no-copy-stream fit bf16-mixed --trainer.devices 1
# The bf16 fit with the model reading the device for its masks and labels (no host
# twins, lib/training/step/batch_device.h), first: at 74fa619 and 39a28ed it was 15-20 %
# faster than the fit with twins, which ran before it; this order tells whether
# running first was what slowed the twins' fit.
step "fit bf16-mixed without host twins" 45 && SALT_HOST_TWINS=0 FIT_TAG=bf16-no-twins fit bf16-mixed --trainer.devices 1
step "fit 16-mixed" 45 && fit 16-mixed --trainer.devices 1
step "fit 32" 60 && fit 32 --trainer.devices 1
if step "salt test" 30; then
  "$salt" test -c logs/GN2_gpu_bf16-mixed/config.yaml --data.num_test -1 --trainer.accelerator \
    "$([ "$device" = cuda ] && echo gpu || echo cpu)" >>"$out/fit.log" 2>&1
  note "salt test (bf16-mixed run): exit $?; $(grep -E 'jets/s|written' "$out/fit.log" | tail -1)"
fi

# ---- Lightning's ThroughputMonitor on the card (issue 67): its rates and MFU against the
# card's peak (training/outputs/peak_flops.h) in metrics.csv, every 20 steps ----
if step "throughput" 45; then
  FIT_TAG=bf16-throughput fit bf16-mixed --trainer.devices 1 --trainer.log_every_n_steps "$([ "$dry" = 1 ] && echo 2 || echo 20)" \
    "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.ThroughputMonitor, init_args: {batch_size_fn: null}}"
  "$py" - logs/GN2_gpu_bf16-throughput/metrics.csv <<'PY' 2>&1 | tee -a "$summary"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r.get("train/device/samples_per_sec")]
if not rows:
    sys.exit("throughput: no ThroughputMonitor rows in metrics.csv")
last = rows[-1]
mfu = last.get("train/device/mfu") or "none (no peak known for this device)"
print(f"  throughput: {len(rows)} rows; last: {float(last['train/device/samples_per_sec']):.0f} jets/s, "
      f"{float(last['train/device/flops_per_sec']) / 1e12:.2f} TFLOP/s, mfu {mfu}")
PY
fi

# ---- what a salt user's Python does with the checkpoints: torch 2.x's weights-only
# load, Lightning's migration and load_from_checkpoint (issue 33; Debian's torch here
# has neither) ----
if step "lightning" 60; then
  "$py" scripts/lightning_checks.py logs/GN2_gpu_bf16-mixed >>"$out/fit.log" 2>&1
  note "lightning checks (scripts/lightning_checks.py): exit $?"
  grep "^lightning_checks:" "$out/fit.log" | tail -3 | tee -a "$summary"
  # Lightning resumes salt-cpp's EMA and on-exception checkpoints, salt-cpp Lightning's (CPU fits).
  if "$py" -c 'import lightning.pytorch' 2>/dev/null; then
    PY=$py SALT_BIN=$salt scripts/lightning_resume_check.sh "$out/lightning_resume" >>"$out/fit.log" 2>&1
    note "lightning resume check (scripts/lightning_resume_check.sh): exit $?"
    grep "^lightning_resume" "$out/fit.log" | tail -6 | tee -a "$summary"
  else
    note "lightning resume check: $py has no Lightning; not run"
  fi
fi

# ---- the loader next to the step ----
if step "loader" 45; then
  if [ "$dry" = 1 ]; then loader=(--jets 20000 --workers 0,2 --epochs 2); else loader=(--jets 400000 --workers 0,4,16 --epochs 2); fi
  "$build/bench/bench_loader" "${loader[@]}" >>"$out/bench.txt" 2>&1
  rc=$?
  note "bench_loader: exit $rc"
  grep -E "^  (raw|loader)" "$out/bench.txt" | tee -a "$summary"
  # A crash (seen at 827dd1e on the H200, none here): where, from cuda-gdb (the
  # machine has no gdb), on a smaller file.
  if [ $rc -ge 128 ] && command -v cuda-gdb >/dev/null; then
    timeout 120 cuda-gdb -batch -ex run -ex bt --args "$build/bench/bench_loader" --jets 40000 --workers 0,4,16 \
      --epochs 1 >"$out/loader_crash.txt" 2>&1
    grep -E "^#[0-9]+|signal|jets/s" "$out/loader_crash.txt" | head -24 | tee -a "$summary"
  fi
fi
# ---- the largest GN2 batch that fits in bf16 (issue 32): Lightning's BatchSizeFinder
# (binsearch, one step and one validation batch per trial), then one batch of training ----
if step "batch size" 90; then
  # max_val is taken untried once reached (as Lightning): at most the training jets.
  if [ "$dry" = 1 ]; then bsf_max=512; else bsf_max=$ntrain; fi
  FIT_TAG=bsf fit bf16-mixed --trainer.devices 1 --trainer.limit_train_batches 1 --trainer.limit_val_batches 1 \
    --trainer.max_epochs 1 "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.BatchSizeFinder, init_args: {mode: binsearch, steps_per_trial: 1, margin: 0, max_val: $bsf_max}}"
  grep -E "Batch size [0-9]+ (succeeded|failed)|Finished batch size finder" "$out/fit.log" | tail -6 | tee -a "$summary"
fi
# ---- issue 57: bf16 on this machine's CPU (AMX, AVX-512 BF16): at call L, bf16-mixed fits
# were 2.1x slower than fp32 here; at call M the native fit 3.3x slower than emulated while
# their steps (one repeated batch) were even. The lead: oneDNN builds a primitive for each
# new shape and plain packing gives every batch new ones; bucketed rows
# (SALT_CPU_BF16_STATIC_ROWS, default 1 with native kernels) keep them few. LibTorch's bf16
# kernels (native, rows bucketed and not) against bf16-rounded inputs multiplied in
# float32 (emulated), the step alone and whole fits, interleaved, and oneDNN's primitive
# creations against executions for both native fits. ----
if step "cpu bf16" 150; then
  cpu=(-c configs/GN2.yaml -c configs/GN2_cpu.yaml --trainer.accelerator cpu)
  cpu_train=64000 cpu_val=8000
  [ "$dry" = 1 ] && cpu_train=-1 cpu_val=-1
  for m in native emulated native emulated; do
    echo "== bench_model cpu bf16-mixed SALT_CPU_BF16=$m" >>"$out/bench.txt"
    SALT_CPU_BF16=$m "$build/bench/bench_model" --device cpu --no-python --precision bf16-mixed --iters 3 \
      --quick >>"$out/bench.txt" 2>&1
    note "cpu step bf16 $m (GN2, GN2_cpu): $(grep -E '^  jets/s: salt-cpp' "$out/bench.txt" | tail -2 | tr -s '\n ' ' ')"
  done
  "$build/bench/bench_model" --device cpu --no-python --precision 32 --iters 3 --quick >>"$out/bench.txt" 2>&1
  note "cpu step 32 (GN2, GN2_cpu): $(grep -E '^  jets/s: salt-cpp' "$out/bench.txt" | tail -2 | tr -s '\n ' ' ')"
  # m: 32, native with rows bucketed (1) or not (0), emulated
  for m in 32 native_1 native_0 emulated; do
    p=bf16-mixed; [ $m = 32 ] && p=32
    mode=${m%_*}; [ $m = 32 ] && mode=native
    rows=${m#native_}; [ "$rows" = "$m" ] && rows=1
    SALT_CPU_BF16=$mode SALT_CPU_BF16_STATIC_ROWS=$rows "$salt" fit "${cpu[@]}" --force -n GN2_cpu -ls "$m" \
      -oc --data.train_file "$data/pp_output_train.h5" --data.val_file "$data/pp_output_val.h5" \
      --data.norm_dict "$data/norm_dict.yaml" --data.class_dict "$data/class_dict.yaml" \
      --data.num_train $cpu_train --data.num_val $cpu_val --data.num_workers 2 --trainer.max_epochs 2 \
      --trainer.precision $p >/tmp/cpu_fit.log 2>&1
    note "cpu fit $m: exit $?; $(grep -oE 'computing with [0-9]+ CPU thread' /tmp/cpu_fit.log | head -1);" \
      "$(grep -E 'train epoch [0-9]+:' /tmp/cpu_fit.log | sed 's/.*train epoch/epoch/; s/, peak.*//' | tr '\n' ';')"
  done
  onednn_train=8000 onednn_val=1000
  [ "$dry" = 1 ] && onednn_train=-1 onednn_val=-1  # the dry run's toy data: every jet
  for rows in 1 0; do
    SALT_CPU_BF16=native SALT_CPU_BF16_STATIC_ROWS=$rows ONEDNN_VERBOSE=1 "$salt" fit "${cpu[@]}" --force \
      -n GN2_cpu -ls "onednn_$rows" -oc --data.train_file "$data/pp_output_train.h5" \
      --data.val_file "$data/pp_output_val.h5" --data.norm_dict "$data/norm_dict.yaml" \
      --data.class_dict "$data/class_dict.yaml" --data.num_train "$onednn_train" --data.num_val "$onednn_val" \
      --data.num_workers 0 --trainer.max_epochs 1 --trainer.precision bf16-mixed >/tmp/cpu_onednn.log 2>&1
    note "cpu fit native, rows bucketed $rows, exit $?, oneDNN: $(grep -c 'create:cache_miss' /tmp/cpu_onednn.log)" \
      "primitives created, $(grep -c 'create:cache_hit' /tmp/cpu_onednn.log) cache hits," \
      "$(grep -c ',exec,' /tmp/cpu_onednn.log) executions; $(grep -E 'trained [0-9]+ jets' /tmp/cpu_onednn.log |
        sed 's/.*trained/trained/')"
  done
fi
# ---- the same tagger at the end, on the card (issue 65): salt and salt-cpp, 3 seeds
# each, GN2 at salt's size over 500,000 toy jets, bf16-mixed (bench/seeds_vs_salt.sh);
# only when SALT_GPU_ONLY names it (~7 minutes of the card) ----
if [ -n "${SALT_GPU_ONLY:-}" ] && step "seeds" 420; then
  if [ ! -d "$salt_site/salt" ]; then
    note "seeds: no $salt_site (run scripts/salt_site.py here and carry .saltpy)"
  else
    seeds_data=$root/data/gpu_seeds
    if [ "$dry" = 1 ]; then sd=(--num_train 2000 --num_val 500 --num_test 1000)
      sv=(ACCELERATOR=cpu PRECISION=32 BATCH=250 EPOCHS=2 WORKERS=2 SEEDS="1 2" "OVERLAYS=$root/configs/GN2_cpu.yaml")
    else sd=(--num_train 500000 --num_val 50000 --num_test 100000)
      sv=(ACCELERATOR=gpu PRECISION=bf16-mixed BATCH=$batch EPOCHS=4 WORKERS=$workers SEEDS="1 2 3" OVERLAYS=); fi
    [ -f "$seeds_data/pp_output_train.h5" ] ||
      "$salt" toydata --output_dir "$seeds_data" "${sd[@]}" >>"$out/fit.log" 2>&1
    env "${sv[@]}" SALT_BIN="$salt" SALT_PY="${SALT_GPU_SALT_PY:-$py}" PYTHONPATH="$salt_site" \
      timeout $((budget - $(elapsed) - 10)) bench/seeds_vs_salt.sh "$seeds_data" /tmp/seeds_vs_salt >/dev/null 2>&1
    note "seeds (bench/seeds_vs_salt.sh): exit $?"
    cp /tmp/seeds_vs_salt/seeds.log "$out/seeds.log" 2>/dev/null
    tee -a "$summary" </tmp/seeds_vs_salt/seeds.log
  fi
fi
note "gpu_check: done in $(elapsed) s (commit $commit)"
