#include "training/cuda_runtime.h"

#include <ATen/Context.h>

#if SALT_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace salt::cuda {

bool compiled_with_cuda() {
#if SALT_CUDA
  return true;
#else
  return false;
#endif
}

std::optional<MemoryPeak> memory_peak(int device) {
#if SALT_CUDA
  // Index 0 of each stat array is the aggregate over pool types in every LibTorch
  // (StatType::AGGREGATE; the enum moved namespaces in 2.5).
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  constexpr double kMiB = 1024.0 * 1024.0;
  return MemoryPeak{static_cast<double>(stats.allocated_bytes[0].peak) / kMiB,
                    static_cast<double>(stats.reserved_bytes[0].peak) / kMiB};
#else
  (void)device;
  return std::nullopt;
#endif
}

void reset_memory_peak(int device) {
#if SALT_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
#else
  (void)device;
#endif
}

void set_float32_matmul_precision(const std::string& precision) {
  at::globalContext().setFloat32MatmulPrecision(precision);
}

std::string float32_matmul_precision() {
  switch (at::globalContext().float32MatmulPrecision()) {
    case at::Float32MatmulPrecision::HIGH: return "high";
    case at::Float32MatmulPrecision::MEDIUM: return "medium";
    default: return "highest";
  }
}

}  // namespace salt::cuda
