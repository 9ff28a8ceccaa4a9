// The card's launcher of segment_sum_block.h (segment_sum.cu, built only against a
// LibTorch with CUDA; segment_sum_absent.cpp where nvcc is not used). Torch-free:
// raw device pointers, the stream as void* (a cudaStream_t). Returns "" or the
// CUDA error's text.
#pragma once
#include <cstdint>
#include <string>

#include "models/kernels/cuda/short_attention_cuda.h"  // Dtype, kernels_compiled

namespace salt::models::segment_sum {

using short_attention::Dtype;

// out [segments, columns] from g [rows, columns]: sum_column for every (segment, column);
// keep null or [rows, columns] in g's type (a ReLU's output).
std::string sum_rows(Dtype dtype, const void* g, const int64_t* order, const int64_t* offsets, void* out,
                     int64_t segments, int64_t columns, const void* keep, void* stream);

}  // namespace salt::models::segment_sum
