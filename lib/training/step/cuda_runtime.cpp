#include "training/step/cuda_runtime.h"

#include <ATen/Context.h>

#if SALT_CUDA
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
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

#if SALT_CUDA
namespace {
// torch 2.11's caching allocator has no per-device state before CUDA's lazy
// initialisation ("Invalid device argument" from getDeviceStats/resetPeakStats on
// the GPU machine); an empty tensor on the device runs it.
void ensure_initialised(int device) {
  (void)at::empty({0}, at::TensorOptions().device(at::kCUDA, static_cast<c10::DeviceIndex>(device)));
}
}  // namespace
#endif

std::optional<MemoryPeak> memory_peak(int device) {
#if SALT_CUDA
  ensure_initialised(device);
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

std::map<std::string, double> memory_stats(int device) {
  std::map<std::string, double> out;
#if SALT_CUDA
  ensure_initialised(device);
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  auto put = [&](const std::string& name, const auto& stat) {
    out[name + ".all.current"] = static_cast<double>(stat[0].current);
    out[name + ".all.peak"] = static_cast<double>(stat[0].peak);
  };
  put("allocated_bytes", stats.allocated_bytes);
  put("reserved_bytes", stats.reserved_bytes);
  put("active_bytes", stats.active_bytes);
  out["num_alloc_retries"] = static_cast<double>(stats.num_alloc_retries);
  out["num_ooms"] = static_cast<double>(stats.num_ooms);
#else
  (void)device;
#endif
  return out;
}

void reset_memory_peak(int device) {
#if SALT_CUDA
  ensure_initialised(device);
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
#else
  (void)device;
#endif
}

std::string device_name(int device) {
#if SALT_CUDA
  return at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(device))->name;
#else
  (void)device;
  return "";
#endif
}

int compute_capability_major(int device) {
#if SALT_CUDA
  return at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(device))->major;
#else
  (void)device;
  return 0;
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
