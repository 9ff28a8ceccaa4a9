// salt's LayerNorm (no affine parameters, eps 1e-5) written straight in the half
// type of the matrix product after it (norm_cast_block.h), differentiable: a warp
// per row on the card, the same lane maths on the CPU (for the tests). What the
// unfused path computes, LibTorch's layer_norm in float32 and then autocast's cast,
// is layer_norm_cast_reference.
#pragma once
#include <torch/torch.h>

namespace salt::models {

// x [N, D] float32 -> layer_norm(x) rounded to out_type (bf16 or half) as one
// differentiable operation, whose gradient to x is float32. On a card salt-cpp's
// kernel (which this build must have: norm_cast_kernel_compiled), on the CPU the
// kernel's lane maths (norm_cast_block.h) one row at a time.
torch::Tensor layer_norm_cast(const torch::Tensor& x, torch::ScalarType out_type);

// layer_norm_cast where it takes the normed rows of a pre-norm layer: on a card, x
// float32 [N, D], autocast on for the card in bf16 or half, and `use_kernel`
// (ForwardKernels::norm_cast_kernel) in a build with the kernel; the result is then
// in autocast's type, which the next linear layer takes without a cast. Undefined
// where it does not take x (the caller runs layer_norm).
torch::Tensor layer_norm_for_product(const torch::Tensor& x, bool use_kernel);

// What the unfused path computes: torch::layer_norm(x, {D}) in float32, cast to out_type.
torch::Tensor layer_norm_cast_reference(const torch::Tensor& x, torch::ScalarType out_type);

// Whether this build has the kernel (a CUDA LibTorch, SALT_CUDA_KERNELS on).
bool norm_cast_kernel_compiled();

}  // namespace salt::models
