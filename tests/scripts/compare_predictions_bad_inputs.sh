#!/usr/bin/env bash
# scripts/compare_predictions.py on inputs it cannot compare: one line on stderr,
# `compare_predictions.py: error: ...` naming the file, dataset or flag, exit 2, no
# traceback; an "agreement" over nothing (no datasets, no rows, only NaN, a file
# against itself) is refused as `salt compare_models` refuses it. Equal files still
# agree (exit 0) and a difference is still one (exit 1). Files written by h5py.
# Usage: compare_predictions_bad_inputs.sh WORK_DIR
set -euo pipefail
work=$1
script=$(cd "$(dirname "$0")/../.." && pwd)/scripts/compare_predictions.py
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work" && cd "$work"

"$py" - <<'PY'
import shutil
import h5py
import numpy as np

jet = np.dtype([("GN2_pb", "f4"), ("GN2_pu", "f4"), ("HadronConeExclTruthLabelID", "i4")])
track = np.dtype([("GN2_TrackOrigin_pu", "f4"), ("valid", "?")])

def prediction(path, jets, tracks):
    with h5py.File(path, "w") as f:
        f.attrs["config"] = "model: {}"
        f.create_dataset("jets", data=jets, maxshape=(None,))
        f.create_dataset("tracks", data=tracks, maxshape=(None, tracks.shape[1]))

rng = np.random.default_rng(1)
jets = np.zeros(10, jet)
jets["GN2_pb"], jets["GN2_pu"] = rng.random(10), rng.random(10)
jets["HadronConeExclTruthLabelID"] = 5
tracks = np.zeros((10, 4), track)
tracks["valid"][:, :2] = True
tracks["GN2_TrackOrigin_pu"] = np.where(tracks["valid"], rng.random((10, 4)), np.nan)  # padded slots NaN
prediction("good.h5", jets, tracks)
shutil.copy("good.h5", "copy.h5")
jets["GN2_pb"][3] += 1e-3
prediction("differs.h5", jets, tracks)
for side in "ab":
    h5py.File(f"no_datasets_{side}.h5", "w").create_group("jets")  # only an empty group
    prediction(f"zero_jets_{side}.h5", np.zeros(0, jet), np.zeros((0, 4), track))
    nan_jets, nan_tracks = jets.copy(), tracks.copy()
    nan_jets["GN2_pb"] = nan_jets["GN2_pu"] = np.nan
    nan_tracks["GN2_TrackOrigin_pu"] = np.nan
    prediction(f"all_nan_{side}.h5", nan_jets, nan_tracks)
one_nan = jets.copy()
one_nan["GN2_pu"] = np.nan  # one float field NaN in both files beside finite ones: a real pair
prediction("one_nan_a.h5", one_nan, tracks)
prediction("one_nan_b.h5", one_nan, tracks)
data = bytearray(open("good.h5", "rb").read())
open("truncated.h5", "wb").write(data[:3000])  # its signature intact
for i in range(1200, len(data), 7):
    data[i] ^= 0x5A
open("garbled.h5", "wb").write(data)
with h5py.File("jets_group.h5", "w") as f:  # good.h5's names, 'jets' a group
    f.attrs["config"] = "model: {}"
    f.create_group("jets").create_dataset("GN2_pb", data=jets["GN2_pb"])
    f.create_dataset("tracks", data=tracks, maxshape=(None, 4))
PY
: >zero_bytes_a.h5
: >zero_bytes_b.h5
echo "not HDF5" >text.h5
mkdir folder.h5
ln -s good.h5 link.h5

failed=0
run() {  # run EXPECTED_RC PATTERN WHAT args...: the exit code and stderr's one line
  local rc_want=$1 pattern=$2 what=$3
  shift 3
  local rc=0
  "$py" "$script" "$@" >out.txt 2>err.txt || rc=$?
  if [ "$rc_want" = 2 ]; then
    if [ "$rc" -ne 2 ] || [ "$(wc -l <err.txt)" -ne 1 ] || ! grep -q "^compare_predictions.py: error: .*$pattern" err.txt; then
      echo "FAIL $what: expected exit 2 and one line 'compare_predictions.py: error: ...$pattern', got exit $rc:"
      cat out.txt err.txt
      failed=1
      return
    fi
    echo "ok   $what: $(cat err.txt)"
  else
    if [ "$rc" -ne "$rc_want" ] || [ -s err.txt ] || ! grep -q "$pattern" out.txt; then
      echo "FAIL $what: expected exit $rc_want and '$pattern' on stdout, got exit $rc:"
      cat out.txt err.txt
      failed=1
      return
    fi
    echo "ok   $what: exit $rc, $(tail -n 1 out.txt)"
  fi
}

run 0 "tracks (10, 4) 2 fields equal" "a copy agrees" good.h5 copy.h5
run 1 "jets.GN2_pb: max |diff| 0.001 > 1e-05" "a difference is one" good.h5 differs.h5
run 0 "jets (10,) 3 fields equal" "a difference within --atol" good.h5 differs.h5 --atol 0.01
run 0 "jets (10,) 3 fields equal" "one all-NaN field beside finite ones" one_nan_a.h5 one_nan_b.h5
run 2 "missing.h5: no such file" "a missing file" good.h5 missing.h5
run 2 "text.h5: not an HDF5 file" "a text file" text.h5 good.h5
run 2 "zero_bytes_a.h5: not an HDF5 file" "two empty files" zero_bytes_a.h5 zero_bytes_b.h5
run 2 "folder.h5: not a file" "a folder" good.h5 folder.h5
run 2 "truncated.h5: cannot open: .*truncated file" "a truncated file" good.h5 truncated.h5
run 2 "garbled.h5: cannot read" "a garbled file" good.h5 garbled.h5
run 2 "no datasets in no_datasets_a.h5 nor no_datasets_b.h5: nothing to compare" "two files without datasets" \
  no_datasets_a.h5 no_datasets_b.h5
run 2 "jets: no rows in zero_jets_a.h5 nor zero_jets_b.h5 (shape (0,)): nothing to compare" "two files of 0 jets" \
  zero_jets_a.h5 zero_jets_b.h5
run 2 "no finite float value in all_nan_a.h5 nor all_nan_b.h5: nothing to compare" "two all-NaN files" \
  all_nan_a.h5 all_nan_b.h5
# Before: stdout said "N fields equal, max |diff| 0" above the refusal.
if ! grep -q "without a finite value in either file" out.txt; then
  echo "FAIL two all-NaN files: stdout does not say the fields had no finite value:"; cat out.txt; failed=1
fi
run 2 "good.h5 and good.h5 are the same file" "a file against itself" good.h5 good.h5
run 2 "good.h5 and link.h5 are the same file" "a file against a link to it" good.h5 link.h5
run 2 "jets is a dataset in good.h5 and a group in jets_group.h5" "a dataset against a group" good.h5 jets_group.h5
run 2 "jets is a group in jets_group.h5 and a dataset in good.h5" "a group against a dataset" jets_group.h5 good.h5
run 2 "argument --atol: must be a finite number >= 0, not 'nan'" "--atol nan" good.h5 differs.h5 --atol nan
run 2 "argument --atol: must be a finite number >= 0, not 'inf'" "--atol inf" good.h5 differs.h5 --atol inf
run 2 "argument --atol: must be a finite number >= 0, not '-1'" "--atol -1" good.h5 differs.h5 --atol=-1
run 2 "argument --atol: must be a number, not 'lots'" "--atol lots" good.h5 differs.h5 --atol lots
run 2 "the following arguments are required: b" "one file only" good.h5
long=$(printf 'x%.0s' $(seq 1000))
run 2 "x\.\.\.: no such file" "a 1000-character name" "$long.h5" good.h5
if [ "$(wc -c <err.txt)" -gt 300 ]; then
  echo "FAIL a 1000-character name: echoed whole ($(wc -c <err.txt) characters)"; failed=1
fi
exit "$failed"
