// short_attention_block.h on the card: a grid of (jet, head) blocks of 128
// threads, shared memory sized for the batch's longest jet.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "models/kernels/cuda/io.cuh"
#include "models/kernels/cuda/short_attention_cuda.h"

namespace salt::models::short_attention {
namespace {

constexpr int kThreads = 128;
// Shared memory a block may ask for: under the 48 KB every card gives without
// opting in, unless the batch's jets need more (then up to this, with opt-in).
constexpr int64_t kMaxSmemBytes = 96 * 1024;

template <class T, class Io>
__global__ void forward_kernel(const T* qkv, T* out, const int64_t* starts, Shape s) {
  extern __shared__ float smem[];
  forward_block<T, Io>(qkv, out, starts, s, blockIdx.x, blockIdx.y, threadIdx.x, blockDim.x, smem);
}

template <class T, class Io>
__global__ void backward_kernel(const T* qkv, const T* dout, T* dqkv, const int64_t* starts, Shape s) {
  extern __shared__ float smem[];
  backward_block<T, Io>(qkv, dout, dqkv, starts, s, blockIdx.x, blockIdx.y, threadIdx.x, blockDim.x, smem);
}

std::string error_text(cudaError_t e) { return e == cudaSuccess ? std::string() : std::string(cudaGetErrorString(e)); }

// Launches kernel over (batch, heads) with `floats` of shared memory per block.
template <class Kernel, class... Args>
std::string launch(Kernel kernel, int64_t floats, int64_t batch, const Shape& s, void* stream, Args... args) {
  if (batch == 0) return {};
  const int64_t bytes = floats * static_cast<int64_t>(sizeof(float));
  if (bytes > kMaxSmemBytes) return "short attention: a jet of " + std::to_string(s.max_len) + " rows needs too much shared memory";
  if (bytes > 48 * 1024) {
    if (auto e = error_text(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
        !e.empty())
      return e;
  }
  const dim3 grid(static_cast<unsigned>(batch), static_cast<unsigned>(s.heads));
  kernel<<<grid, kThreads, static_cast<size_t>(bytes), static_cast<cudaStream_t>(stream)>>>(args...);
  return error_text(cudaGetLastError());
}

}  // namespace

bool kernels_compiled() { return true; }

int max_supported_len(int dh) {
  int len = 0;
  while (backward_smem_floats(len + 1, dh) * static_cast<int64_t>(sizeof(float)) <= kMaxSmemBytes) ++len;
  return len;
}

std::string forward(Dtype dtype, const void* qkv, void* out, const int64_t* starts, int64_t batch, const Shape& s,
                    void* stream) {
  const int64_t floats = forward_smem_floats(s.max_len, s.dh);
  switch (dtype) {
    case Dtype::kBFloat16:
      return launch(forward_kernel<__nv_bfloat16, Bf16Io>, floats, batch, s, stream,
                    static_cast<const __nv_bfloat16*>(qkv), static_cast<__nv_bfloat16*>(out), starts, s);
    case Dtype::kHalf:
      return launch(forward_kernel<__half, HalfIo>, floats, batch, s, stream, static_cast<const __half*>(qkv),
                    static_cast<__half*>(out), starts, s);
    case Dtype::kFloat:
      return launch(forward_kernel<float, FloatIo>, floats, batch, s, stream, static_cast<const float*>(qkv),
                    static_cast<float*>(out), starts, s);
  }
  return "short attention: unknown dtype";
}

std::string backward(Dtype dtype, const void* qkv, const void* dout, void* dqkv, const int64_t* starts, int64_t batch,
                     const Shape& s, void* stream) {
  const int64_t floats = backward_smem_floats(s.max_len, s.dh);
  switch (dtype) {
    case Dtype::kBFloat16:
      return launch(backward_kernel<__nv_bfloat16, Bf16Io>, floats, batch, s, stream,
                    static_cast<const __nv_bfloat16*>(qkv), static_cast<const __nv_bfloat16*>(dout),
                    static_cast<__nv_bfloat16*>(dqkv), starts, s);
    case Dtype::kHalf:
      return launch(backward_kernel<__half, HalfIo>, floats, batch, s, stream, static_cast<const __half*>(qkv),
                    static_cast<const __half*>(dout), static_cast<__half*>(dqkv), starts, s);
    case Dtype::kFloat:
      return launch(backward_kernel<float, FloatIo>, floats, batch, s, stream, static_cast<const float*>(qkv),
                    static_cast<const float*>(dout), static_cast<float*>(dqkv), starts, s);
  }
  return "short attention: unknown dtype";
}

}  // namespace salt::models::short_attention
