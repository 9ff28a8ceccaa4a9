#!/usr/bin/env bash
# Fuzzes salt-cpp with libFuzzer (clang from Debian, ASan + UBSan): builds the
# targets of tests/fuzz in build-fuzz/ (git-ignored), seeds each corpus from the
# repository (configs/ and the zoo's configs for fuzz_config), runs each target for
# SECONDS, and fails on any crash, sanitizer report, leak or hang (-timeout).
# Findings land in build-fuzz/findings/<target>/; the corpus grows in
# build-fuzz/corpus/<target>/ and is reused by later runs.
# Usage: scripts/fuzz.sh SECONDS [TARGET...]   (default: fuzz_config fuzz_h5_schema)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:?usage: scripts/fuzz.sh SECONDS [TARGET...]}
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_config fuzz_h5_schema)
build=$root/build-fuzz
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang (apt-get install clang)" >&2; exit 1; }

# The main build's configuration with SALT_FUZZ on top (scripts/build.sh: it takes
# the build lock, and configures again when that configuration changed).
CC=clang CXX=clang++ SALT_BUILD_DIR=$build SALT_CMAKE_ARGS="-DSALT_FUZZ=ON ${SALT_CMAKE_ARGS:-}" \
  "$root/scripts/build.sh" --target "${targets[@]}" -- -k 0  # every compile error at once

seed_config() {  # each YAML of configs/ and the zoo as an input: "<yaml>\n%%\n<tokens>"
  local corpus=$1 i=0
  for f in "$root"/configs/*.yaml "$root"/tests/fixtures/zoo/*/*.yaml "$root"/tests/fixtures/zoo/*.yaml; do
    [ -f "$f" ] || continue
    { cat "$f"; printf '\n%%%%\n--trainer.max_epochs\n2\n--data.batch_size=100'; } > "$corpus/seed_$((i++))"
  done
}

seed_h5_schema() {  # libFuzzer grows this corpus from nothing; a few random starts help
  local corpus=$1
  for i in 1 2 3 4; do head -c 4096 /dev/urandom > "$corpus/seed_$i"; done
}

# The targets run side by side, one per core (each is one process): on the 2-core CI
# machine two 60 s runs take the wall time two 30 s runs took one after the other.
fuzz_one() {  # fuzz_one TARGET: runs it, then prints its figures; non-zero on a finding
  local t=$1 corpus=$build/corpus/$1 findings=$build/findings/$1 log=$build/$1.log status=0
  if ! (cd "$build" && SALT_BASE_CONFIG=$root/configs/base.yaml ASAN_OPTIONS=detect_leaks=1 \
        "./tests/fuzz/$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="$findings/" "$corpus" >"$log" 2>&1); then
    echo "fuzz.sh: $t FOUND A PROBLEM (inputs in $findings):"; tail -30 "$log"; status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$log" | sed "s/^/fuzz.sh: $t /" || true
  local units
  units=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  [ -z "$units" ] || echo "fuzz.sh: $t $units inputs in ${seconds}s: $((units / seconds)) executions per second"
  return $status
}

pids=()
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  mkdir -p "$corpus" "$build/findings/$t"
  [ -n "$(ls -A "$corpus")" ] || "seed_${t#fuzz_}" "$corpus"
  echo "fuzz.sh: $t for ${seconds}s (corpus $(ls "$corpus" | wc -l) inputs)"
  fuzz_one "$t" > "$build/$t.summary" &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || status=1
  cat "$build/${targets[$i]}.summary"
done
exit $status
