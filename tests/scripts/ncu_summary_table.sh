#!/usr/bin/env bash
# scripts/ncu_summary.py on a log laid out as `ncu --csv --page raw` writes it (its
# ==PROF== lines, the header, the units row, thousands separators): each kernel's
# time, launches, bytes moved, bandwidth and share of the memory roofline, and the
# same per kind of work, worked out by hand below; a log without the time metric, or
# without kernel rows, is one line and exit 1. Without the byte metrics (an older
# profile) the time table alone.
# Usage: ncu_summary_table.sh WORK_DIR
set -euo pipefail
work=$1
script=$(cd "$(dirname "$0")/../.." && pwd)/scripts/ncu_summary.py
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }

cat >log.csv <<'CSV'
==PROF== Connected to process 123 (bench_model)
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum"
"","","","","","","","","","","","Mbyte","Kbyte","usecond"
"0","123","bench_model","h","void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda>","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0","1,024.00","512,000.00","400.00"
"1","123","bench_model","h","sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64","1","7","(128, 1, 1)","(64, 1, 1)","0","9.0","10.00","5,000.00","100.00"
"2","123","bench_model","h","void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda>","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0","1,024.00","512,000.00","400.00"
"3","123","bench_model","h","void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>","1","7","(128, 1, 1)","(64, 1, 1)","0","9.0","20.00","10,000.00","100.00"
==PROF== Disconnected from process 123
CSV
out=$("$py" "$script" log.csv --peak-gbs 4800 --step-ms 1.25)
echo "$out"
# 2 x (1024 + 512) MB + 15 MB + 30 MB = 3117 MB in 1 ms; at 4.8 TB/s 0.649 ms.
grep -qF "device time 1.000 ms in 4 kernel launches (3 kernels), 3.117 GB moved (at 4800 GB/s: 0.649 ms, the memory roofline)" <<<"$out" || fail "totals"
grep -qF "the step: 1.250 ms wall, the kernels' sum 80.0% of it" <<<"$out" || fail "step"
# the cast: 3072 MB in 0.8 ms = 3840 GB/s, 80 % of 4800
grep -qE "^ 80\.0%    0\.800        2    400\.0   3072\.00    3840  80\.0%  void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy" <<<"$out" || fail "cast row"
grep -qE "^ 10\.0%    0\.100        1    100\.0     15\.00     150   3\.1%  sm90_xmma_gemm" <<<"$out" || fail "gemm row"
kinds=$(sed -n '/^by kind/,$p' <<<"$out")
grep -qE "80\.0%.*  copies and casts$" <<<"$kinds" || fail "kind: casts"
grep -qE "10\.0%.*  matrix products$" <<<"$kinds" || fail "kind: gemm"
grep -qE "10\.0%.*  elementwise$" <<<"$kinds" || fail "kind: gelu"

# Time only: no byte columns.
"$py" - <<'PY'
import csv
rows = list(csv.reader(line for line in open("log.csv") if line.startswith('"')))
with open("time_only.csv", "w", newline="") as f:
    csv.writer(f, quoting=csv.QUOTE_ALL).writerows([r[:11] + r[13:] for r in rows])
PY
out=$("$py" "$script" time_only.csv 2)
grep -qF "device time 1.000 ms in 4 kernel launches (3 kernels)" <<<"$out" || fail "time-only totals"
grep -q "GB/s" <<<"$out" && fail "time-only log printed bandwidth"
[ "$(sed -n '/kernel$/,/^$/p' <<<"$out" | grep -c '%')" = 2 ] || fail "TOP 2"

# Refusals: one line, exit 1.
for bad in "no_time" "no_rows"; do
  case $bad in
    no_time) head -3 log.csv | sed 's/gpu__time_duration.sum/sm__cycles.sum/' >$bad.csv ;;
    no_rows) head -3 log.csv >$bad.csv ;;
  esac
  set +e
  err=$("$py" "$script" $bad.csv 2>&1 >/dev/null)
  rc=$?
  set -e
  [ $rc = 1 ] || fail "$bad: exit $rc"
  [ "$(wc -l <<<"$err")" = 1 ] && grep -q "^ncu_summary: " <<<"$err" || fail "$bad: $err"
done
echo "ncu_summary_table: ok"
