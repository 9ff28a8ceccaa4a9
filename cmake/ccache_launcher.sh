#!/usr/bin/env bash
# The compiler launcher (CMakeLists.txt): every compile goes through ccache set up
# so that a checkout anywhere hits what another checkout compiled (a fresh CI clone
# rebuilds in minutes, not 13), including the files that use the precompiled torch
# header:
# - paths under the checkout become relative to the build folder, also those ccache
#   cannot rewrite itself (CMake's `-Xclang -include -Xclang <abs>/cmake_pch.hxx`);
# - the precompiled header is built without ccache (it records this checkout's
#   absolute paths, so another checkout's copy would not load) and hashed through
#   a checksum file next to it (pch_external_checksum), written here: the compiler,
#   the flags and the content of every file the header read, with the checkout's
#   path taken out. Hashing the 120 MB header itself would miss across checkouts.
# Usage: ccache_launcher.sh CCACHE ROOT COMPILER ARGS...
set -euo pipefail
ccache=$1 root=$2
shift 2
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}  # debug info names relative paths anyway
export CCACHE_PCH_EXTSUM=${CCACHE_PCH_EXTSUM:-1}
# A miss takes the included files from the compiler's depfile (ninja's -MD) instead
# of running the preprocessor first: +2.4 s a torch file otherwise.
export CCACHE_DEPEND=${CCACHE_DEPEND:-1}

args=() out="" depfile="" header=0 prev=""
for a in "$@"; do
  case $a in "$root"/*) a=$(realpath -m --relative-to=. "$a") ;; esac
  case $prev in -o) out=$a ;; -MF) depfile=$a ;; esac
  [ "$prev" = -x ] && [ "$a" = c++-header ] && header=1
  args+=("$a")
  prev=$a
done

if [ "$header" = 0 ]; then exec "$ccache" "${args[@]}"; fi

# The precompiled header itself is built without ccache: it records the absolute
# paths of this checkout, so one cached from another checkout would not load here
# (in depend mode ccache would cache it).
rm -f "$out.sum"
"${args[@]}"
[ -n "$depfile" ] && [ -f "$depfile" ] || exit 0

# The files the header read, from the make-style depfile ("out: a b \" lines).
mapfile -t deps < <(sed -e 's/^[^:]*://' -e 's/\\$//' "$depfile" | tr -s ' \t' '\n' | sed '/^$/d')
inside=() outside=()
for f in "${deps[@]}"; do
  case $(realpath -m "$f") in "$root"/*) inside+=("$f") ;; *) outside+=("$f") ;; esac
done
{
  "${args[0]}" --version
  printf '%s\n' "${args[@]}" | sed "s|$root|<root>|g"
  for f in "${inside[@]}"; do printf '%s %s\n' "$f" "$(sed "s|$root|<root>|g" "$f" | sha256sum)"; done
  [ ${#outside[@]} -eq 0 ] || sha256sum "${outside[@]}"
} | sha256sum | cut -d' ' -f1 >"$out.sum.tmp"
mv "$out.sum.tmp" "$out.sum"
