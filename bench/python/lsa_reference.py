"""bench_hungarian's baseline: scipy's linear_sum_assignment (the solver behind salt's
HungarianMatcher) on the same matrices, one call per matrix as salt's per-jet loop.

Reads float64 matrices (count x rows x cols, row-major) from a file, prints
"<microseconds per matrix> <sum of the optimal costs>".
"""
import sys
import time

import numpy as np
from scipy.optimize import linear_sum_assignment

path, count, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
matrices = np.fromfile(path, dtype=np.float64).reshape(count, rows, cols)
total = 0.0
start = time.perf_counter()
for m in matrices:
    r, c = linear_sum_assignment(m)
    total += m[r, c].sum()
elapsed = time.perf_counter() - start
print(f"{elapsed / count * 1e6:.3f} {total:.9f}")
