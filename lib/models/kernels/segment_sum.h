// Sums of rows by segment (segment_sum_block.h): the backward of gather_rows over
// grouped rows (common.h), where GN2's vertexing edges send their gradients back
// to their tracks.
#pragma once
#include <torch/torch.h>

namespace salt::models {

// g [R, C]; counts [S] int64 (segment s holds counts[s] consecutive rows, taken
// through `order` [R] int64 when defined; rows past the last segment are not read)
// -> [S, C] in g's dtype, summed in float32. On a card with `use_kernel`
// (ForwardKernels::segment_sum_kernel, models/packing/forward_context.h) salt-cpp's
// kernel, else LibTorch's operators (index_select, a float32 copy, segment_reduce,
// a cast back). It is off by default: on an H200 its gpu test passed but the step
// ran 0.85x LibTorch's operators (docs/performance.md, call L).
// With `keep` (a ReLU's output, g's shape) g counts only where keep is not <= 0:
// the ReLU's backward (LibTorch's threshold_backward) and the sum in one pass.
torch::Tensor segment_sum_rows(const torch::Tensor& g, const torch::Tensor& counts, const torch::Tensor& order,
                               bool use_kernel, const torch::Tensor& keep = {});

// LibTorch's way, on any device (what segment_sum_rows runs when the kernel does not).
torch::Tensor segment_sum_rows_reference(const torch::Tensor& g, const torch::Tensor& counts, const torch::Tensor& order,
                                         const torch::Tensor& keep = {});
// The kernel's own function run on the CPU (float32 rows), for the tests.
torch::Tensor segment_sum_rows_blocks_on_cpu(const torch::Tensor& g, const torch::Tensor& counts,
                                             const torch::Tensor& order, const torch::Tensor& keep = {});

// Whether this build has the kernel (a CUDA LibTorch, SALT_CUDA_KERNELS on).
bool segment_sum_kernel_compiled();

}  // namespace salt::models
