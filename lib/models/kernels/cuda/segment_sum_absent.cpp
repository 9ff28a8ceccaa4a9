// The launcher of segment_sum.cu where salt-cpp's own CUDA kernels are not
// compiled (SALT_CUDA_KERNELS=OFF): it says so, and kernels_compiled() is false, so
// segment_sum_rows takes LibTorch's operators instead.
#include "models/kernels/cuda/segment_sum_cuda.h"

namespace salt::models::segment_sum {

std::string sum_rows(Dtype, const void*, const int64_t*, const int64_t*, void*, int64_t, int64_t, const void*, void*) {
  return "salt-cpp was built without its CUDA kernels (SALT_CUDA_KERNELS=OFF)";
}

}  // namespace salt::models::segment_sum
