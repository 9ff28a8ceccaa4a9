// salt-cpp's attention kernel for short sequences (short_attention_block.h) on
// packed rows, differentiable: one (jet, head) per thread block on the card, the
// same block maths one block at a time on the CPU (float32 only there, for tests).
#pragma once
#include <torch/torch.h>

#include <cstdint>

namespace salt::models {

// qkv [N, 3D] packed rows sorted jet by jet (jet b's rows starts[b] .. starts[b+1],
// starts int64 [B + 1] on qkv's device), max_len >= the most rows of one jet ->
// softmax(scale q k^T) v per jet and head, [N, D].
torch::Tensor short_varlen_attention(const torch::Tensor& qkv, const torch::Tensor& starts, int64_t max_len,
                                     int64_t heads, double scale);

// Whether the card's kernels take this call: CUDA qkv in bf16, fp16 or fp32 and
// jets no longer than their shared memory allows for the head size.
bool short_varlen_applies(const torch::Tensor& qkv, int64_t heads, int64_t max_len);

}  // namespace salt::models
