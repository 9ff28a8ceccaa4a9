// The card's launcher of pair_relu_block.h (pair_relu.cu, built only against a
// LibTorch with CUDA; pair_relu_absent.cpp where nvcc is not used). Torch-free: raw
// device pointers, the stream as void* (a cudaStream_t). Returns "" or the CUDA
// error's text.
#pragma once
#include <cstdint>
#include <string>

#include "models/kernels/cuda/short_attention_cuda.h"  // Dtype, kernels_compiled

namespace salt::models::pair_relu_kernel {

using short_attention::Dtype;

// out [edges, columns] from p_i, p_j (rows stride_i, stride_j apart) in `dtype`:
// edge_column for every (edge, column).
std::string forward(Dtype dtype, const void* p_i, int64_t stride_i, const void* p_j, int64_t stride_j,
                    const int64_t* row_i, const int64_t* row_j, void* out, int64_t edges, int64_t columns,
                    void* stream);

}  // namespace salt::models::pair_relu_kernel
