// norm_cast_block.h on the card: a warp per row, 8 rows (256 threads) per block.
// The row stays in L1 between the passes (GN2's 256 float32 columns are 1 KB);
// lanes read consecutive columns, so each pass over a row is coalesced.
#include <cuda_runtime.h>

#include <algorithm>

#include "models/kernels/cuda/io.cuh"
#include "models/kernels/cuda/norm_cast_cuda.h"
#include "models/kernels/norm_cast_block.h"

namespace salt::models::norm_cast {
namespace {

constexpr int kRowsPerBlock = 8;

// The lanes' sum, every lane ending with it: butterfly_sum's order on the card.
__device__ float warp_sum(float v) {
  for (int offset = kLanes / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <class Out, class OutIo>
__global__ void forward_kernel(const float* x, Out* y, float* mean, float* rstd, int64_t rows, int64_t d) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kLanes;
  const int lane = static_cast<int>(threadIdx.x % kLanes);
  if (row >= rows) return;  // whole warps leave together: the shuffles below see all 32 lanes
  const float* xr = x + row * d;
  const float m = warp_sum(lane_sum(xr, d, lane)) / static_cast<float>(d);
  const float r = inverse_std(warp_sum(lane_square_sum(xr, d, m, lane)), d);
  lane_write<Out, OutIo>(xr, y + row * d, d, m, r, lane);
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

template <class Grad, class GradIo>
__global__ void backward_kernel(const float* x, const Grad* dy, const float* mean, const float* rstd, float* dx,
                                int64_t rows, int64_t d) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kLanes;
  const int lane = static_cast<int>(threadIdx.x % kLanes);
  if (row >= rows) return;
  const float m = mean[row], r = rstd[row];
  float a, b;
  lane_grad_sums<Grad, GradIo>(x + row * d, dy + row * d, d, m, r, lane, &a, &b);
  lane_write_grad<Grad, GradIo>(x + row * d, dy + row * d, dx + row * d, d, m, r, warp_sum(a), warp_sum(b), lane);
}

std::string error_text(cudaError_t e) { return e == cudaSuccess ? std::string() : std::string(cudaGetErrorString(e)); }

// Blocks for `rows`, or "" with blocks 0 when there is nothing to do.
std::string grid_for(int64_t rows, unsigned* blocks) {
  const int64_t n = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  if (n > 2147483647LL) return "norm and cast: more than 2^31 - 1 blocks of rows";
  *blocks = static_cast<unsigned>(n);
  return {};
}

}  // namespace

std::string forward(Dtype out, const float* x, void* y, float* mean, float* rstd, int64_t rows, int64_t d,
                    void* stream) {
  unsigned blocks = 0;
  if (auto e = grid_for(rows, &blocks); !e.empty() || blocks == 0 || d == 0) return e;
  const auto s = static_cast<cudaStream_t>(stream);
  switch (out) {
    case Dtype::kBFloat16:
      forward_kernel<__nv_bfloat16, Bf16Io><<<blocks, kRowsPerBlock * kLanes, 0, s>>>(
          x, static_cast<__nv_bfloat16*>(y), mean, rstd, rows, d);
      break;
    case Dtype::kHalf:
      forward_kernel<__half, HalfIo><<<blocks, kRowsPerBlock * kLanes, 0, s>>>(x, static_cast<__half*>(y), mean,
                                                                                rstd, rows, d);
      break;
    case Dtype::kFloat: return "norm and cast: writes a half type, not float32";
  }
  return error_text(cudaGetLastError());
}

std::string backward(Dtype grad, const float* x, const void* dy, const float* mean, const float* rstd, float* dx,
                     int64_t rows, int64_t d, void* stream) {
  unsigned blocks = 0;
  if (auto e = grid_for(rows, &blocks); !e.empty() || blocks == 0 || d == 0) return e;
  const auto s = static_cast<cudaStream_t>(stream);
  switch (grad) {
    case Dtype::kBFloat16:
      backward_kernel<__nv_bfloat16, Bf16Io><<<blocks, kRowsPerBlock * kLanes, 0, s>>>(
          x, static_cast<const __nv_bfloat16*>(dy), mean, rstd, dx, rows, d);
      break;
    case Dtype::kHalf:
      backward_kernel<__half, HalfIo><<<blocks, kRowsPerBlock * kLanes, 0, s>>>(x, static_cast<const __half*>(dy),
                                                                                  mean, rstd, dx, rows, d);
      break;
    case Dtype::kFloat: return "norm and cast: takes a half type's gradient, not float32";
  }
  return error_text(cudaGetLastError());
}

}  // namespace salt::models::norm_cast
