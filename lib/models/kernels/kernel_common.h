// What salt-cpp's own kernels share between nvcc (models/kernels/cuda/*.cu) and the C++
// compiler (their CPU emulation in the tests): the host/device qualifier, the
// block barrier (a no-op where one thread runs a block), and float32 loads and
// stores (the half types' are in models/kernels/cuda/io.cuh, nvcc only).
#pragma once

#if defined(__CUDACC__)
#define SALT_HD __host__ __device__
#else
#define SALT_HD
#endif

#if defined(__CUDA_ARCH__)
#define SALT_BLOCK_SYNC() __syncthreads()
#else
#define SALT_BLOCK_SYNC() ((void)0)
#endif

// Unrolls a loop by n in device code, where independent loads then overlap; the
// host's compilers are left to their own choice.
#if defined(__CUDA_ARCH__)
#define SALT_PRAGMA(x) _Pragma(#x)
#define SALT_UNROLL(n) SALT_PRAGMA(unroll n)
#else
#define SALT_UNROLL(n)
#endif

namespace salt::models {

struct FloatIo {
  SALT_HD static float load(const float* p) { return *p; }
  SALT_HD static void store(float* p, float v) { *p = v; }
};

}  // namespace salt::models
