// bf16-mixed on CPUs without bf16 matrix instructions. LibTorch multiplies bf16
// matrices with oneDNN only where the CPU has AVX-512 (BW, VL, DQ; LibTorch's own
// mkldnn_bf16_device_check); elsewhere (AVX2 machines) its fallback gemm runs
// scalar code, ~100x slower than float32 (docs/performance.md).
// There the matrix products under CPU autocast round their inputs to bf16, multiply
// in float32 and round the result to bf16: the numbers of a bf16 gemm that
// accumulates in float32, as oneDNN's does, at float32's speed.
#pragma once
#include <memory>

namespace torch {
class Library;
}

namespace salt::models {

// What the CPU's instruction set asks for: emulated without AVX-512 (BW, VL, DQ).
bool cpu_bf16_emulated_by_default();

// Whether bf16 matrix products on this CPU take the emulated path: the CPU's
// default until set_cpu_bf16_emulated, which a fit calls from its StepOptions
// (SALT_CPU_BF16=native|emulated; training/step/step_options.h) when it is built.
bool cpu_bf16_emulated();
void set_cpu_bf16_emulated(bool emulated);

// From now on (for the process), CPU autocast's bf16 linear, matmul, mm, bmm,
// addmm, baddbmm and addbmm run emulated when cpu_bf16_emulated() (says so once).
// Cheap after the first call.
void use_cpu_bf16_matmul();

// For tests: the emulated kernels while alive, whatever the CPU; the LibTorch
// kernels again after.
class ScopedCpuBf16Emulation {
 public:
  ScopedCpuBf16Emulation();
  ~ScopedCpuBf16Emulation();
  ScopedCpuBf16Emulation(const ScopedCpuBf16Emulation&) = delete;
  ScopedCpuBf16Emulation& operator=(const ScopedCpuBf16Emulation&) = delete;

 private:
  std::unique_ptr<torch::Library> library_;
};

}  // namespace salt::models
