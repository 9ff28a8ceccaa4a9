// The first hidden layer of a vertexing task's edge net, in one pass (pair_relu.h):
// out[e, c] = ReLU(p_i[row_i[e], c] + p_j[row_j[e], c]), the sender's and the
// receiver's terms of the split first Linear (vertexing_task.cpp) added in float32
// and rounded once to out's type, which is what LibTorch's gather, gather, add and
// ReLU give in that type. One thread per (edge, column) on the card (pair_relu.cu);
// the tests run the same function on the CPU. At GN2's batch 4000 the unfused
// operators wrote the [1M, 128] edge rows three times and read them four times.
#pragma once
#include <cstdint>

#include "models/kernels/kernel_common.h"

namespace salt::models::pair_relu_kernel {

// p_i, p_j: rows of `columns` values, `stride_i`/`stride_j` apart (views of one
// product's halves); row_i, row_j [edges]; out [edges, columns] row-major.
template <class T, class Io>
SALT_HD void edge_column(const T* p_i, int64_t stride_i, const T* p_j, int64_t stride_j, const int64_t* row_i,
                         const int64_t* row_j, T* out, int64_t columns, int64_t edge, int64_t column) {
  const float sum = Io::load(p_i + row_i[edge] * stride_i + column) + Io::load(p_j + row_j[edge] * stride_j + column);
  // Rounded before the ReLU, as the unfused add is; the ReLU of a rounded value is
  // the rounded ReLU, and NaN stays NaN as in LibTorch's relu.
  Io::store(out + edge * columns + column, sum > 0.f || sum != sum ? sum : 0.f);
}

}  // namespace salt::models::pair_relu_kernel
