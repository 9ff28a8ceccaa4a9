// segment_sum_block.h on the card: a block per segment, a thread per column
// (blocks of up to 128 threads step over wider rows), so that each of a segment's
// rows is read in one coalesced sweep.
#include <cuda_runtime.h>

#include <algorithm>

#include "models/kernels/cuda/io.cuh"
#include "models/kernels/cuda/segment_sum_cuda.h"
#include "models/kernels/segment_sum_block.h"

namespace salt::models::segment_sum {
namespace {

constexpr int kThreads = 128;

template <class T, class Io>
__global__ void sum_kernel(const T* g, const int64_t* order, const int64_t* offsets, T* out, int64_t columns,
                           const T* keep) {
  for (int64_t c = threadIdx.x; c < columns; c += blockDim.x)
    sum_column<T, Io>(g, order, offsets, out, columns, blockIdx.x, c, keep);
}

template <class T, class Io>
std::string launch(const void* g, const int64_t* order, const int64_t* offsets, void* out, int64_t segments,
                   int64_t columns, const void* keep, void* stream) {
  if (segments == 0 || columns == 0) return {};
  if (segments > 2147483647LL) return "segment sum: more than 2^31 - 1 segments";
  const int threads = static_cast<int>(std::min<int64_t>(kThreads, (columns + 31) / 32 * 32));
  sum_kernel<T, Io><<<static_cast<unsigned>(segments), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const T*>(g), order, offsets, static_cast<T*>(out), columns, static_cast<const T*>(keep));
  const auto e = cudaGetLastError();
  return e == cudaSuccess ? std::string() : std::string(cudaGetErrorString(e));
}

}  // namespace

std::string sum_rows(Dtype dtype, const void* g, const int64_t* order, const int64_t* offsets, void* out,
                     int64_t segments, int64_t columns, const void* keep, void* stream) {
  switch (dtype) {
    case Dtype::kBFloat16:
      return launch<__nv_bfloat16, Bf16Io>(g, order, offsets, out, segments, columns, keep, stream);
    case Dtype::kHalf: return launch<__half, HalfIo>(g, order, offsets, out, segments, columns, keep, stream);
    case Dtype::kFloat: return launch<float, FloatIo>(g, order, offsets, out, segments, columns, keep, stream);
  }
  return "segment sum: unknown dtype";
}

}  // namespace salt::models::segment_sum
