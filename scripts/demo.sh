#!/usr/bin/env bash
# The README's main job on the bundled default: install dependencies, build, and
# show the resolved CPU-sized GN2 config. (Training and evaluation on the toy
# dataset join this script as they land.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/bootstrap.sh"
"$root/scripts/build.sh" --target salt
cd "$root"
salt=${SALT_BUILD_DIR:-$root/build}/app/salt
"$salt" --version
"$salt" fit -c configs/GN2.yaml -c configs/GN2_cpu.yaml --print_config
