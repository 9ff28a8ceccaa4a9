#!/usr/bin/env bash
# Run HERE (the Debian 12 development machine), before borrowing the GPU machine.
# The GPU machine has CUDA, a pip torch (LibTorch 2.x) and CMake, but no package
# registry: the other libraries salt-cpp builds against travel as Debian 12
# packages, downloaded (not installed) into .deps/ (git-ignored), which the device
# call names in `carry`. scripts/gpu_check.sh unpacks and uses them there. Gloo's
# headers go into .deps/gloo-include (scripts/gloo_headers.sh, from a clone of
# pytorch/gloo: SALT_GLOO_GIT).
# Usage: scripts/gpu_deps.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/.deps
# What CMakeLists.txt finds, plus the LZF filter for HDF5 files written by h5py.
wanted=(libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev libhdf5-dev libgit2-dev
        libgtest-dev libgmock-dev liblzf-dev hdf5-plugin-lzf libonnx-dev libprotobuf-dev protobuf-compiler)
# Not cairo: its closure (X11, fontconfig, ...) would take .deps from ~24 MB to 92 MB,
# past the device call's 64 MiB. Without it the plots are left out there (a
# warning at configure time; salt test says so); the GPU check needs none.
# The C/C++ runtime and toolchain parts the GPU machine has in newer versions:
# never carried (an older glibc or libstdc++ on the library path would break it).
never='^(libc6|libc6-dev|libc-dev-bin|linux-libc-dev|libcrypt1|libcrypt-dev|libgcc-s1|libstdc\+\+6|gcc-12-base|libgfortran5|libquadmath0|libnsl2|libnsl-dev|libtirpc3|libtirpc-common|libtirpc-dev|rpcsvc-proto|libcurl3-nss|libcurl4-nss-dev|libnss3|libnspr4|nss-plugin-pem|catch2|libhdf5-fortran-102|libhdf5-hl-fortran-100|libjpeg-dev|libjpeg62-turbo-dev)$'
mapfile -t pkgs < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "${wanted[@]}" | grep -v '^ ' | grep -v '<' | sort -u | grep -Ev "$never")
rm -rf "$out"
mkdir -p "$out"
(cd "$out" && apt-get download "${pkgs[@]}" >/dev/null 2>&1) || {
  echo "gpu_deps: apt-get download failed (run 'apt-get update' first?)" >&2
  exit 1
}
# The pip LibTorch there ships no Gloo headers (docs/distributed.md): those of the Gloo
# it was built with, which gpu_check.sh hands to CMake (SALT_GLOO_INCLUDE_DIR).
"$root/scripts/gloo_headers.sh" "" "$out/gloo-include"  # "": its default clone, or SALT_GLOO_GIT
echo "gpu_deps: ${#pkgs[@]} packages and Gloo's headers, $(du -sh "$out" | cut -f1) in $out; name .deps in the device call's carry"
