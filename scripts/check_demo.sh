#!/usr/bin/env bash
# Checks what the README's main job (scripts/demo.sh) printed and wrote: the
# b-tagging performance table, the ONNX Runtime check of the export, and the run
# directory with its config, checkpoint, prediction file, plots and ONNX model.
# CI (.ci/run) runs it on the demo's output. Usage: scripts/check_demo.sh LOG
# (LOG: the demo's stdout and stderr; paths in it are relative to the repository root)
set -uo pipefail
log=${1:?usage: scripts/check_demo.sh LOG}
cd "$(dirname "$0")/.."
missing=()
need_line() {  # need_line WHAT REGEX: LOG has a line matching REGEX
  grep -Eq "$2" "$log" || missing+=("$1 (no line matching '$2')")
}
need_file() {  # need_file WHAT PATH: a non-empty file
  [ -s "$2" ] || missing+=("$1 ($2 absent or empty)")
}

need_line "the performance table" "b-tagging performance \(f_c = [0-9.]+; [0-9]+ b, [0-9]+ c, [0-9]+ light jets\)"
for eff in 70 77 85; do
  need_line "the table's ${eff}% row" "^ +${eff}% +[-0-9.]+ +([0-9.]+ ± [0-9.]+|inf \(none pass\))!? +([0-9.]+ ± [0-9.]+|inf \(none pass\))"
done
need_line "the ONNX Runtime check" "ONNX Runtime vs salt-cpp on [0-9]+ test jets .*max \|diff\|"
run=$(sed -n 's/^run directory: //p' "$log" | tail -n 1)
if [ -z "$run" ]; then
  missing+=("the run directory (no 'run directory:' line)")
else
  need_file "the run's config" "$run/config.yaml"
  need_file "the loss curves" "$run/loss_curves.png"
  need_file "the ONNX model" "$run/network.onnx"
  ckpt=$(ls "$run"/ckpts/*.ckpt 2>/dev/null | head -n 1)
  predictions=$(ls "$run"/ckpts/*__test_*.h5 2>/dev/null | head -n 1)
  need_file "a checkpoint" "${ckpt:-$run/ckpts/*.ckpt}"
  need_file "the test predictions" "${predictions:-$run/ckpts/*__test_*.h5}"
  if [ -n "$predictions" ]; then
    need_file "the rejection plot" "${predictions%.h5}_roc.png"
    need_file "the rejection plot (PDF)" "${predictions%.h5}_roc.pdf"
  fi
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "check_demo: the main job's output lacks:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "check_demo: performance table, ONNX Runtime check and $run (config, checkpoint, predictions, plots, network.onnx) all there"
