# Sourced by the helpers in submit/: sets $salt to the salt-cpp binary.
# $SALT_BINARY first, then the repository's build (build.sh's $SALT_BUILD_DIR,
# else build/), then an installed salt's (these helpers in <prefix>/share/salt/submit,
# salt in <prefix>/bin), then `salt` on PATH.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
salt=""
for candidate in "${SALT_BINARY:-}" "${SALT_BUILD_DIR:-$root/build}/app/salt" "$root/build/app/salt" "$root/../../bin/salt"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then salt=$candidate; break; fi
done
if [ -z "$salt" ]; then salt=$(command -v salt || true); fi
if [ -z "$salt" ]; then
  echo "$(basename "$0"): cannot find the salt binary: build it (scripts/build.sh --target salt), put it on PATH or set SALT_BINARY" >&2
  exit 1
fi
