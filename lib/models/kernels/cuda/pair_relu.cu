// pair_relu_block.h on the card: a thread per (edge, column), consecutive threads on
// consecutive columns of one edge row, so that each row is read and written in a
// coalesced sweep; the sender and receiver rows (~64k tracks at GN2's batch 4000,
// ~16 MB in bf16) are read a dozen times each and stay in L2.
#include <cuda_runtime.h>

#include <algorithm>

#include "models/kernels/cuda/io.cuh"
#include "models/kernels/cuda/pair_relu_cuda.h"
#include "models/kernels/pair_relu_block.h"

namespace salt::models::pair_relu_kernel {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535LL * 32;

template <class T, class Io>
__global__ void edge_kernel(const T* p_i, int64_t stride_i, const T* p_j, int64_t stride_j, const int64_t* row_i,
                            const int64_t* row_j, T* out, int64_t edges, int64_t columns) {
  const int64_t total = edges * columns;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x)
    edge_column<T, Io>(p_i, stride_i, p_j, stride_j, row_i, row_j, out, columns, k / columns, k % columns);
}

template <class T, class Io>
std::string launch(const void* p_i, int64_t stride_i, const void* p_j, int64_t stride_j, const int64_t* row_i,
                   const int64_t* row_j, void* out, int64_t edges, int64_t columns, void* stream) {
  if (edges == 0 || columns == 0) return {};
  const int64_t blocks = std::min<int64_t>((edges * columns + kThreads - 1) / kThreads, kMaxBlocks);
  edge_kernel<T, Io><<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const T*>(p_i), stride_i, static_cast<const T*>(p_j), stride_j, row_i, row_j, static_cast<T*>(out),
      edges, columns);
  const auto e = cudaGetLastError();
  return e == cudaSuccess ? std::string() : std::string(cudaGetErrorString(e));
}

}  // namespace

std::string forward(Dtype dtype, const void* p_i, int64_t stride_i, const void* p_j, int64_t stride_j,
                    const int64_t* row_i, const int64_t* row_j, void* out, int64_t edges, int64_t columns,
                    void* stream) {
  switch (dtype) {
    case Dtype::kBFloat16:
      return launch<__nv_bfloat16, Bf16Io>(p_i, stride_i, p_j, stride_j, row_i, row_j, out, edges, columns, stream);
    case Dtype::kHalf:
      return launch<__half, HalfIo>(p_i, stride_i, p_j, stride_j, row_i, row_j, out, edges, columns, stream);
    case Dtype::kFloat:
      return launch<float, FloatIo>(p_i, stride_i, p_j, stride_j, row_i, row_j, out, edges, columns, stream);
  }
  return "pair ReLU: unknown dtype";
}

}  // namespace salt::models::pair_relu_kernel
