// The launchers of norm_cast.cu where salt-cpp's own CUDA kernels are not compiled
// (SALT_CUDA_KERNELS=OFF): every call says so, and norm_cast_kernel_compiled() is
// false, so the norm takes LibTorch's layer_norm and autocast's cast instead.
#include "models/kernels/cuda/norm_cast_cuda.h"

namespace salt::models::norm_cast {

std::string forward(Dtype, const float*, void*, float*, float*, int64_t, int64_t, void*) {
  return "salt-cpp was built without its CUDA kernels (SALT_CUDA_KERNELS=OFF)";
}
std::string backward(Dtype, const float*, const void*, const float*, const float*, float*, int64_t, int64_t, void*) {
  return "salt-cpp was built without its CUDA kernels (SALT_CUDA_KERNELS=OFF)";
}

}  // namespace salt::models::norm_cast
