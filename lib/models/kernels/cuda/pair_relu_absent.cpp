// The launcher of pair_relu.cu where salt-cpp's own CUDA kernels are not compiled
// (SALT_CUDA_KERNELS=OFF): it says so, and kernels_compiled() is false, so the
// vertexing edges take LibTorch's operators instead.
#include "models/kernels/cuda/pair_relu_cuda.h"

namespace salt::models::pair_relu_kernel {

std::string forward(Dtype, const void*, int64_t, const void*, int64_t, const int64_t*, const int64_t*, void*, int64_t,
                    int64_t, void*) {
  return "salt-cpp was built without its CUDA kernels (SALT_CUDA_KERNELS=OFF)";
}

}  // namespace salt::models::pair_relu_kernel
