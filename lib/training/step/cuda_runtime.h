// What salt-cpp asks of the CUDA runtime beyond torch's tensor API: the caching
// allocator's peak memory and the float32 matmul precision. Torch-free header;
// the CUDA-only parts compile only where LibTorch has CUDA (SALT_CUDA, see
// cmake/Cuda.cmake) and answer "nothing" elsewhere, so callers need no #if.
#pragma once
#include <map>
#include <optional>
#include <string>

namespace salt::cuda {

// Whether this binary was built against a LibTorch with CUDA.
bool compiled_with_cuda();

// Peak memory of torch's CUDA caching allocator on `device` since the last reset,
// in MiB: what tensors held (allocated) and what the allocator took from the
// driver (reserved). nullopt without CUDA.
struct MemoryPeak {
  double allocated_mb = 0;
  double reserved_mb = 0;
};
std::optional<MemoryPeak> memory_peak(int device);
void reset_memory_peak(int device);

// torch.cuda.memory_stats' aggregate figures for `device` under its names
// (allocated_bytes.all.current/peak, reserved_bytes..., active_bytes...,
// num_alloc_retries, num_ooms); empty without CUDA.
std::map<std::string, double> memory_stats(int device);

// torch.cuda.get_device_name(device) and the major compute capability (8: Ampere);
// "" and 0 without CUDA.
std::string device_name(int device);
int compute_capability_major(int device);

// torch.set_float32_matmul_precision: "highest" (float32), "high" or "medium"
// (TF32 tensor cores for float32 matrix products on CUDA). salt sets "medium"
// for training only; it changes CUDA results only.
void set_float32_matmul_precision(const std::string& precision);
std::string float32_matmul_precision();

}  // namespace salt::cuda
