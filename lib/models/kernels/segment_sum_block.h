// Row sums by segment, the backward of a gather whose rows group by their source
// (common.h, gather_rows with RowGroups): out[s] = the sum of rows k in
// [offsets[s], offsets[s+1]) of g, each taken through `order` when there is one,
// accumulated in float32 and written in out's type; with `keep` (a ReLU's output,
// laid out as g) a row's value counts only where keep's is positive, the ReLU's
// backward folded into the sum (pair_relu.h). One thread per (segment,
// column) on the card (segment_sum.cu); the tests run the same function on the
// CPU. In one kernel it reads g once: LibTorch's way (index_select through the
// order, a float32 copy of every row, segment_reduce, a cast back) wrote GN2's
// vertexing gradients ([1M, 128] bf16 rows at batch 4000) twice more, once in
// float32 (docs/performance.md).
#pragma once
#include <cstdint>

#include "models/kernels/kernel_common.h"

namespace salt::models::segment_sum {

// g [rows, columns] and out [segments, columns] row-major; order null or [rows];
// keep null or [rows, columns]. The rows are added in turn, whoever runs this.
template <class T, class Io>
SALT_HD void sum_column(const T* g, const int64_t* order, const int64_t* offsets, T* out, int64_t columns,
                        int64_t segment, int64_t column, const T* keep = nullptr) {
  float acc = 0.f;
  SALT_UNROLL(4)
  for (int64_t k = offsets[segment]; k < offsets[segment + 1]; ++k) {
    const int64_t at = (order ? order[k] : k) * columns + column;
    // A ReLU's backward as LibTorch's threshold_backward: 0 where its output is <= 0.
    if (!keep || !(Io::load(keep + at) <= 0.f)) acc += Io::load(g + at);
  }
  Io::store(out + segment * columns + column, acc);
}

}  // namespace salt::models::segment_sum
