#!/usr/bin/env bash
# Regenerates docs/config-reference.md from the schema (salt fit --help).
# tests/cli/cli_test.cpp fails when the file is out of date.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
salt=${SALT_BUILD_DIR:-$root/build}/app/salt
{
  echo "# Config reference"
  echo
  echo "Every key salt-cpp accepts, with its type, default and help, as \`salt fit --help\`"
  echo "prints it (generated from the schema by \`scripts/update_docs.sh\`; do not edit)."
  echo
  echo '```text'
  "$salt" fit --help
  echo '```'
} > "$root/docs/config-reference.md"
