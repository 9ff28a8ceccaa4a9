// Loads and stores of the half types as float32, for salt-cpp's kernels
// (FloatIo, for float32, is in models/kernels/kernel_common.h).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "models/kernels/kernel_common.h"

namespace salt::models {

struct Bf16Io {
  SALT_HD static float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
  SALT_HD static void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16(v); }
};
struct HalfIo {
  SALT_HD static float load(const __half* p) { return __half2float(*p); }
  SALT_HD static void store(__half* p, float v) { *p = __float2half(v); }
};

}  // namespace salt::models
