#!/usr/bin/env bash
# Lightning 2.6 and salt-cpp resume each other's runs (issue 67): a salt-cpp fit
# with EMAWeightAveraging resumed by Lightning (scripts/lightning_resumes.py ema),
# Lightning's checkpoint resumed by salt-cpp (its average's n_averaged goes on),
# and a salt-cpp checkpoint saved on an exception mid-epoch resumed by Lightning.
#
# Usage: PY=<python3 with torch >= 2.1 and Lightning 2.6> scripts/lightning_resume_check.sh [OUT]
#   SALT_BIN [build/app/salt]
#   LIGHTNING_SOURCES  a folder with the checkouts Lightning-AI+pytorch-lightning,
#                      Lightning-AI+utilities and Lightning-AI+torchmetrics: their
#                      packages are put on PYTHONPATH (for a python without
#                      Lightning, e.g. Debian trixie's torch 2.6 from
#                      scripts/trixie_root.sh's trixie_python plus python3-fsspec,
#                      -packaging, -typing-extensions and -tqdm)
# Prints one line per check; exits non-zero at the first failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
salt=${SALT_BIN:-$root/build/app/salt}
py=${PY:?PY: a python3 with torch and Lightning 2.6}
out=$(realpath -m "${1:-/tmp/lightning-resume-check}")
rm -rf "$out" && mkdir -p "$out" && cd "$out"
if [ -n "${LIGHTNING_SOURCES:-}" ]; then
  mkdir -p site
  for p in pytorch-lightning:lightning utilities:lightning_utilities torchmetrics:torchmetrics; do
    cp -r "$LIGHTNING_SOURCES/Lightning-AI+${p%%:*}/src/${p#*:}" site/
  done
  cp "$LIGHTNING_SOURCES/Lightning-AI+pytorch-lightning/src/version.info" site/lightning/ 2>/dev/null || true
  export PYTHONPATH=$out/site${PYTHONPATH:+:$PYTHONPATH}
fi
export OMP_NUM_THREADS=1
"$salt" toydata -o data/toy --num_train 2000 --num_val 500 --num_test 500 >/dev/null 2>&1
fit=("$salt" fit -c "$root/configs/GN2.yaml" -c "$root/configs/GN2_cpu.yaml" --data.batch_size 250 --force
     --trainer.enable_progress_bar false)
ema="--trainer.callbacks+={class_path: lightning.pytorch.callbacks.EMAWeightAveraging, init_args: {decay: 0.8}}"
"${fit[@]}" --trainer.max_epochs 4 -ls ema "$ema" >ema.log 2>&1 || { tail -3 ema.log; exit 1; }
first=$(ls logs/GN2_cpu_ema/ckpts/epoch=000-*.ckpt)
"$py" "$root/scripts/lightning_resumes.py" ema "$first" lightning.ckpt 0.8 2>lightning.log | grep lightning_resumes \
  || { tail -5 lightning.log; exit 1; }
"${fit[@]}" --trainer.max_epochs 4 -ls back "$ema" --ckpt_path lightning.ckpt >back.log 2>&1 || { tail -3 back.log; exit 1; }
# 8 steps an epoch: Lightning's 4 steps of epoch 1 then salt-cpp's epochs 2 and 3.
"$py" - logs/GN2_cpu_back/ckpts <<'PY'
import glob, sys, torch
last = sorted(glob.glob(sys.argv[1] + "/epoch=003-*.ckpt"))[0]
ck = torch.load(last, map_location="cpu", weights_only=True)
n = int(ck["averaging_state"]["n_averaged"])
if (n, ck["global_step"]) != (28, 28):
    sys.exit(f"lightning_resume_check: FAILED: salt-cpp resumed Lightning's checkpoint to n_averaged {n} at step {ck['global_step']}, not 28 at 28")
print(f"lightning_resume_check: salt-cpp resumes Lightning's checkpoint: n_averaged {n} at step {ck['global_step']}")
PY
# A batch of NaN tracks (rows 1000..1250) stops the run mid-epoch; OnExceptionCheckpoint saves.
"$py" - <<'PY'
import shutil, h5py, numpy as np
shutil.copy("data/toy/pp_output_train.h5", "data/toy/nan_train.h5")
with h5py.File("data/toy/nan_train.h5", "r+") as f:
    t = f["tracks"][1000:1250]
    t["d0"][t["valid"]] = np.nan
    f["tracks"][1000:1250] = t
PY
printf 'trainer:\n  callbacks:\n    - class_path: salt.callbacks.Checkpoint\n      init_args: {monitor_loss: val/jets_classification_loss}\n    - class_path: lightning.pytorch.callbacks.OnExceptionCheckpoint\n      init_args: {dirpath: %s/crash}\n' "$out" >crash.yaml
if "${fit[@]}" -c crash.yaml --trainer.max_epochs 4 -ls crash --data.train_file data/toy/nan_train.h5 >crash.log 2>&1; then
  echo "lightning_resume_check: FAILED: the run with a NaN batch did not stop"; exit 1
fi
"$py" "$root/scripts/lightning_resumes.py" exception crash/on_exception.ckpt 8 2>>lightning.log | grep lightning_resumes \
  || { tail -5 lightning.log; exit 1; }
echo "lightning_resume_check: all checks passed"
