// The first hidden layer of a vertexing task's edge net, ReLU(p_i[row_i] + p_j[row_j])
// (pair_relu_block.h), as one differentiable operation: forward one pass over the
// edges, backward the ReLU's mask folded into the two segment sums that send each
// edge's gradient back to its sender and its receiver (segment_sum.h). What the
// unfused path computes, two gathers, an add and a ReLU, is pair_relu_reference.
#pragma once
#include <torch/torch.h>

namespace salt::models {

// The edges' grouping by one side (models/packing/common.h's RowGroups, as tensors):
// row.index_select(0, order) does not decrease (order undefined: row already does),
// counts [N] how often each row occurs.
struct PairSide {
  torch::Tensor counts, order;
};

// p_i [N, H] and p_j [N, H] (one type, columns adjacent: views of one product's
// halves may be), row_i and row_j [E] int64 grouped as `senders` and `receivers`
// say -> [E, H] in p's type; the gradients to p_i and p_j are segment sums
// in float32 rounded once. On a card salt-cpp's kernels (which this build must have:
// pair_relu_kernel_compiled); on the CPU the kernels' functions, in float32 only
// (for the tests).
torch::Tensor pair_relu(const torch::Tensor& p_i, const torch::Tensor& p_j, const torch::Tensor& row_i,
                        const torch::Tensor& row_j, const PairSide& senders, const PairSide& receivers);

// Whether pair_relu takes these rows where a step asked for it: on a card, in a build
// with the kernels, p_i and p_j of one type (bf16, half or float32) and shape as
// pair_relu reads them (models/packing/common.h's gather_pair_relu asks).
bool pair_relu_takes(const torch::Tensor& p_i, const torch::Tensor& p_j, const PairSide& senders,
                     const PairSide& receivers);

// LibTorch's operators for the same: relu(p_i.index_select(0, row_i) + p_j.index_select(0, row_j)).
torch::Tensor pair_relu_reference(const torch::Tensor& p_i, const torch::Tensor& p_j, const torch::Tensor& row_i,
                                  const torch::Tensor& row_j);

// Whether this build has the kernel (a CUDA LibTorch, SALT_CUDA_KERNELS on).
bool pair_relu_kernel_compiled();

}  // namespace salt::models
