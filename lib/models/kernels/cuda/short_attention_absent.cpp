// The launchers of short_attention.cu where salt-cpp's own CUDA kernels are not
// compiled (SALT_CUDA_KERNELS=OFF: no nvcc, or one that fails): every call says so,
// and short_varlen_applies() is then false, so flash attention runs instead.
#include "models/kernels/cuda/short_attention_cuda.h"

namespace salt::models::short_attention {

bool kernels_compiled() { return false; }
int max_supported_len(int) { return 0; }

std::string forward(Dtype, const void*, void*, const int64_t*, int64_t, const Shape&, void*) {
  return "salt-cpp was built without its CUDA kernels (SALT_CUDA_KERNELS=OFF)";
}
std::string backward(Dtype, const void*, const void*, void*, const int64_t*, int64_t, const Shape&, void*) {
  return "salt-cpp was built without its CUDA kernels (SALT_CUDA_KERNELS=OFF)";
}

}  // namespace salt::models::short_attention
