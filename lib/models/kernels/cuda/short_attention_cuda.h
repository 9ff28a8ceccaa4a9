// The card's launchers of short_attention_block.h (short_attention.cu, built only
// against a LibTorch with CUDA; short_attention_absent.cpp where nvcc is not
// used). Torch-free: raw device pointers, the stream as void* (a cudaStream_t).
// Each returns "" or the CUDA error's text.
#pragma once
#include <cstdint>
#include <string>

#include "models/kernels/short_attention_block.h"

namespace salt::models::short_attention {

enum class Dtype { kFloat, kBFloat16, kHalf };

// Whether short_attention.cu was compiled into this build.
bool kernels_compiled();

// The largest jet (rows) the kernels take for this head size: their shared
// memory must fit a block (on sm80+ up to 163 KB; kept well below).
int max_supported_len(int dh);

// out [N, D] for qkv [N, 3D]: forward_block for every (jet, head).
std::string forward(Dtype dtype, const void* qkv, void* out, const int64_t* starts, int64_t batch, const Shape& s,
                    void* stream);
// dqkv [N, 3D] for qkv and dout [N, D]: backward_block for every (jet, head).
std::string backward(Dtype dtype, const void* qkv, const void* dout, void* dqkv, const int64_t* starts, int64_t batch,
                     const Shape& s, void* stream);

}  // namespace salt::models::short_attention
