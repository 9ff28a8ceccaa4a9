# Sourced by scripts/check_torch2.sh and scripts/check_cuda_build.sh: Debian 13
# (trixie) packages and their runtime closure downloaded with apt-get into a
# scratch root and unpacked there -- nothing is installed on this Debian 12
# machine. The builds find LibTorch there through CMAKE_PREFIX_PATH, exactly as
# they would find a pip torch's, and every executable gets the scratch root's
# dynamic loader and an RPATH into it (trixie_ldflags), so tests, benchmarks and
# the `salt` binary (also when a test spawns it, or Slurm does) run on trixie's
# LibTorch unchanged.

# Header-only packages of the closure that must NOT shadow the host's: our code is
# compiled against Debian 12's glibc and links with its libc.so.
trixie_skip='^(libc6-dev|linux-libc-dev|libc-dev-bin|libcrypt-dev|zlib1g-dev|libexpat1-dev|libpython3.*-dev|python3.*-dev)_'
# Packages of the closure that nothing we load needs (other GPU runtimes, Python,
# system tools); apt's dependency list names them but no library we run links them.
trixie_unneeded='^(libamd|libhsa|libdrm|libllvm|libpython|python|libjs-|adduser|cdebconf|debconf|dpkg|libdebian|libnewt|libpam|libsemanage|libaudit|libselinux|libsepol|perl|tar|passwd|login$|util-linux|base-|mount|libblis|libopenblas0-openmp|libopenblas0-serial)'

# trixie_fetch WORK SECTIONS EXTRA_UNNEEDED PACKAGE...: downloads PACKAGE... and
# their dependencies from trixie's SECTIONS (e.g. "main contrib non-free") into
# WORK/debs and unpacks them into WORK/root. EXTRA_UNNEEDED: a regex of further
# packages to leave out ('' for none). Sets trixie_sys and trixie_lib.
trixie_fetch() {
  local work=$1 sections=$2 extra=$3
  shift 3
  mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/etc" "$work/debs"
  echo "deb http://deb.debian.org/debian trixie $sections" > "$work/etc/sources.list"
  local o=(-oDir::Etc::SourceList="$work/etc/sources.list" -oDir::Etc::SourceParts=/dev/null
           -oDir::State::Lists="$work/lists" -oDir::Cache::Archives="$work/archives"
           -oDir::State::Status=/dev/null)
  apt-get "${o[@]}" update -qq
  local pkgs
  mapfile -t pkgs < <(apt-cache "${o[@]}" depends --recurse --no-recommends --no-suggests \
      --no-conflicts --no-breaks --no-replaces --no-enhances "$@" \
      | grep -v '^ ' | grep -v '<' | grep -Ev "$trixie_unneeded" | { if [ -n "$extra" ]; then grep -Ev "$extra"; else cat; fi; } | sort -u)
  (cd "$work/debs" && apt-get "${o[@]}" download "${pkgs[@]}" >/dev/null 2>&1) || {
    echo "trixie_fetch: apt-get download of ${#pkgs[@]} packages failed (no network?)" >&2
    return 1
  }
  rm -rf "$work/root"; mkdir -p "$work/root"
  local f
  for f in "$work"/debs/*.deb; do
    [[ $(basename "$f") =~ $trixie_skip ]] || dpkg -x "$f" "$work/root"
  done
}

# trixie_paths WORK: sets trixie_sys (the scratch root), trixie_lib (its multiarch
# library folder) and trixie_libpath (every folder its libraries live in).
trixie_paths() {
  trixie_sys=$1/root
  trixie_lib=$trixie_sys/usr/lib/x86_64-linux-gnu
  # Debian keeps libgloo in /usr/lib, not the multiarch folder.
  trixie_libpath=$trixie_lib/openblas-pthread:$trixie_lib:$trixie_sys/usr/lib
}

# trixie_ldflags [EXTRA_LIBDIR...]: linker flags for executables that run with
# trixie's loader and libraries first (RPATH, not RUNPATH, so it also covers the
# libraries' own dependencies); whatever trixie's closure lacks (yaml-cpp, HDF5,
# libgit2, spdlog...) comes from the host. --allow-shlib-undefined: the link itself
# uses the host's older glibc, which lacks symbol versions LibTorch 2.6 asks for;
# the loader above has them.
trixie_ldflags() {
  local path=$trixie_libpath extra
  for extra in "$@"; do path+=":$extra"; done
  echo "-Wl,--dynamic-linker=$trixie_lib/ld-linux-x86-64.so.2 -Wl,--disable-new-dtags" \
       "-Wl,-rpath,$path -Wl,-rpath-link,$trixie_lib:$trixie_sys/usr/lib -Wl,--allow-shlib-undefined"
}

# trixie_check_loads LIBRARY [EXTRA_LIBDIR...]: fails with the missing libraries
# when LIBRARY cannot be loaded from the scratch root.
trixie_check_loads() {
  local library=$1 path=$trixie_libpath extra
  shift
  for extra in "$@"; do path+=":$extra"; done
  local missing
  missing=$("$trixie_lib/ld-linux-x86-64.so.2" --library-path "$path" --list "$library" 2>&1 \
            | grep -E 'not found|cannot open|error while loading' || true)
  [ -z "$missing" ] || { echo "$(basename "$0"): $library cannot load: $missing" >&2; return 1; }
}

# trixie_python WORK: Debian trixie's python3 (3.13) with torch 2.6, numpy 2, h5py,
# PyYAML, protobuf and scipy -- what the tests' Python cross-checks import -- in the
# scratch root WORK/root; prints the path of a python3 that runs it (its loader and
# RPATH point into the root, so it also runs as a subprocess of itself). torch 2.6's
# torch.load defaults to weights_only=True, as the torch salt users have.
trixie_python() {
  local work=$1 root=$1/root
  local lib=$root/usr/lib/x86_64-linux-gnu
  local exe=$root/usr/bin/python3.13
  if [ ! -e "$work/.patched" ]; then
    command -v patchelf >/dev/null || apt-get install -y -qq patchelf >/dev/null
    # Python is the point here: only the other runtimes are left out.
    local trixie_unneeded='^(libamd|libhsa|libdrm|libllvm|libjs-|adduser|cdebconf|debconf|dpkg|libdebian|libnewt|libpam|libsemanage|libaudit|libselinux|libsepol|perl|tar|passwd|login$|util-linux|base-|mount|libblis|libopenblas0-openmp|libopenblas0-serial)'
    trixie_fetch "$work" main '' python3-torch python3-h5py python3-yaml python3-protobuf python3-scipy >&2 || return 1
    local path=$lib/openblas-pthread:$lib:$root/usr/lib:$lib/openmpi/lib
    patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" --set-rpath "$path" --force-rpath "$exe" || return 1
    # Extension modules with a RUNPATH ($ORIGIN/lib) do not see the executable's RPATH.
    local so
    while IFS= read -r so; do
      grep -q RUNPATH < <(readelf -d "$so" 2>/dev/null) || continue
      patchelf --set-rpath "$(patchelf --print-rpath "$so" | sed "s#\$ORIGIN#$(dirname "$so")#g"):$path" "$so" || return 1
    done < <(find "$root/usr/lib/python3/dist-packages" -name '*.so')
    touch "$work/.patched"
  fi
  cat >"$work/python3" <<SH
#!/bin/sh
PYTHONHOME=$root/usr PYTHONPATH=$root/usr/lib/python3/dist-packages exec $exe "\$@"
SH
  chmod +x "$work/python3"
  echo "$work/python3"
}
