// The card's launchers of norm_cast_block.h (norm_cast.cu, built only against a
// LibTorch with CUDA; norm_cast_absent.cpp where nvcc is not used). Torch-free: raw
// device pointers, the stream as void* (a cudaStream_t). Each returns "" or the CUDA
// error's text.
#pragma once
#include <cstdint>
#include <string>

#include "models/kernels/cuda/short_attention_cuda.h"  // Dtype, kernels_compiled

namespace salt::models::norm_cast {

using short_attention::Dtype;

// y [rows, d] in `out` (kBFloat16 or kHalf) from x [rows, d] float32, with each
// row's mean and 1 / std [rows] float32 for the backward.
std::string forward(Dtype out, const float* x, void* y, float* mean, float* rstd, int64_t rows, int64_t d,
                    void* stream);
// dx [rows, d] float32 from dy [rows, d] in `grad` (kBFloat16 or kHalf), x and the
// forward's mean and rstd.
std::string backward(Dtype grad, const float* x, const void* dy, const float* mean, const float* rstd, float* dx,
                     int64_t rows, int64_t d, void* stream);

}  // namespace salt::models::norm_cast
