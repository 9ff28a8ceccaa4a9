#!/usr/bin/env bash
# Installs what salt-cpp needs from Debian 12 packages (as root), idempotently:
# quiet when everything is already there. Also selects OpenBLAS, since Debian's
# LibTorch calls whatever libblas.so.3 is selected and the reference BLAS is
# ~27x slower.
#
# bootstrap.sh --demo: only what scripts/demo.sh needs (build salt, train, test, plot,
# export); the tests' extras (Python torch, scipy, Slurm, the fuzzers' runtime) are
# left for scripts/test.sh, which runs this without --demo.
set -euo pipefail

packages=(
  g++ cmake ninja-build ccache pkg-config git
  clang  # scripts/build.sh builds with clang when it is there: a cold build is 3x faster than with GCC
  libtorch-dev libgloo-dev libopenblas0-pthread
  libyaml-cpp-dev libcli11-dev libgit2-dev libspdlog-dev libfmt-dev
  libhdf5-dev hdf5-plugin-lzf hdf5-filter-plugin liblzf-dev
  zlib1g-dev  # CRC-32 of checkpoint entries (core/zip_check)
  libgtest-dev libgmock-dev  # configured with the build folder, also when only salt is built
  libonnx-dev libprotobuf-dev  # salt to_onnx builds graphs with ONNX's own protobuf types and checker
  libcairo2-dev fonts-dejavu-core  # plots (lib/plot): PNG and PDF through cairo, text in DejaVu Sans
  protobuf-compiler  # TensorBoard event records (lib/tensorboard)
)
test_packages=(
  python3-protobuf  # tests decode the TensorBoard records in Python
  python3-torch python3-h5py  # tests cross-check against PyTorch and h5py themselves
  python3-scipy  # bench_hungarian: scipy's linear_sum_assignment (what salt's matcher runs) as its baseline
  slurm-wlm slurmctld slurmd slurm-client munge  # tests/submit start a real single-node Slurm
  libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer with ASan + UBSan
  valgrind  # Refusals: salt run inside valgrind, which its self-restart cannot go through
  make  # build.gtest_suites and build.recovery configure with CMake's Makefiles generator too
)
case "${1:-}" in
  --demo) ;;
  "") packages+=("${test_packages[@]}") ;;
  *) echo "bootstrap: unknown argument '$1' (only --demo)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "bootstrap: missing Debian packages: ${missing[*]}; run this as root (or install them)" >&2
    exit 1
  fi
  echo "bootstrap: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Prefer OpenBLAS for LibTorch's BLAS calls.
alt=libblas.so.3-x86_64-linux-gnu
openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3
if [ -e "$openblas" ] && [ "$(readlink -f /etc/alternatives/$alt 2>/dev/null)" != "$openblas" ]; then
  if [ "$(id -u)" -eq 0 ]; then
    update-alternatives --set "$alt" "$openblas" >/dev/null
  else
    echo "bootstrap: warning: the reference BLAS is selected; as root run: update-alternatives --set $alt $openblas" >&2
  fi
fi

# ONNX Runtime (CPU) for `salt to_onnx`'s check and the export tests: the npm
# package onnxruntime-node, installed into .ort/ (git-ignored), or into SALT_ORT_DIR
# where that is set (salt looks there then, lib/deploy/ort_runner.cpp). Its install
# script would download more and is skipped; the package carries libonnxruntime.so.
ort_version=1.30.0
root=$(cd "$(dirname "$0")/.." && pwd)
ort_dir=${SALT_ORT_DIR:-$root/.ort}

# npm's lines that say what went wrong: its error lines without the stack trace and
# the error object's dump (the whole log is npm's own, named in its last line)
npm_errors() {
  local lines
  lines=$(sed -n 's/^npm \(error\|ERR!\) \{0,1\}//p' "$1" | grep -v '^[[:space:]]\|^[{}]\|^$' || true)
  [ -n "$lines" ] || lines=$(grep -v '^[[:space:]]*$' "$1" || true)  # npm itself did not start
  printf '%s\n' "$lines" | tail -n 8 | cut -c1-200 | sed 's/^/  npm: /'
}
# What usually fixes it, by npm's error code
npm_fix() {
  local code
  code=$(sed -n 's/^npm \(error\|ERR!\) code //p' "$1" | tail -n 1)
  case $code in
    *CERT* | *SELF_SIGNED* | UNABLE_TO_VERIFY* | ERR_TLS* | ERR_SSL*)
      echo "bootstrap: npm does not trust the registry's TLS certificate (a proxy that inspects TLS?):" \
        "give it your CA certificate, 'npm config set cafile /path/to/ca.pem' or NODE_EXTRA_CA_CERTS=/path/to/ca.pem, and run this again" ;;
    ECONNREFUSED | ENOTFOUND | ETIMEDOUT | EAI_AGAIN | ECONNRESET | ENETUNREACH | EHOSTUNREACH | ERR_SOCKET_TIMEOUT)
      echo "bootstrap: npm cannot reach its registry $(npm config get registry 2>/dev/null || true):" \
        "behind a proxy, 'npm config set proxy http://HOST:PORT' and 'npm config set https-proxy http://HOST:PORT'" \
        "(or HTTPS_PROXY); or a mirror, npm_config_registry=URL; then run this again" ;;
    *) echo "bootstrap: once what npm says above is fixed, run this again" ;;
  esac
}
# Quiet when it works; on failure npm's own error lines, what to do, and exit 1 (npm's
# --silent said nothing at all, and demo.sh stopped after "installing onnxruntime-node").
install_ort() {
  local log="$ort_dir/npm-install.log" rc=0
  npm install --prefix "$ort_dir" --ignore-scripts --no-audit --no-fund --loglevel=error \
    "onnxruntime-node@$ort_version" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    {
      echo "bootstrap: error: npm install of onnxruntime-node $ort_version into $ort_dir failed (exit $rc):"
      npm_errors "$log"
      npm_fix "$log"
    } >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
}

if [ ! -f "$ort_dir/node_modules/onnxruntime-node/package.json" ] ||
   ! grep -q "\"version\": \"$ort_version\"" "$ort_dir/node_modules/onnxruntime-node/package.json"; then
  if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    echo "bootstrap: installing nodejs npm"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  fi
  if command -v npm >/dev/null 2>&1; then
    echo "bootstrap: installing onnxruntime-node $ort_version into ${SALT_ORT_DIR:-.ort}/"
    mkdir -p "$ort_dir"
    install_ort
  else
    echo "bootstrap: warning: npm not found; salt to_onnx cannot check exports in ONNX Runtime" >&2
  fi
fi
