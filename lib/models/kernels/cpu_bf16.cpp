#include "models/kernels/cpu_bf16.h"

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <spdlog/spdlog.h>
#include <torch/library.h>

#include "core/torch_compat.h"

#include <atomic>
#include <mutex>
#include <string>

namespace salt::models {
namespace {

// The float32 values a bf16 tensor holds: what autocast's cast to bf16 keeps of
// a float32 tensor, widened back so the product runs in float32. Tensors autocast
// leaves alone (not floating, double) stay as they are.
at::Tensor bf16_values(const at::Tensor& t) {
  if (!t.defined() || !t.is_floating_point() || t.scalar_type() == at::kDouble) return t;
  if (t.scalar_type() == at::kBFloat16) return t.to(at::kFloat);
  return t.to(at::kBFloat16).to(at::kFloat);
}

c10::optional<at::Tensor> bf16_values(const c10::optional<at::Tensor>& t) {
  if (!t || !t->defined()) return t;
  return bf16_values(*t);
}

// Below autocast: the kernels run the float32 product, rounded once to bf16.
struct BelowAutocast {
  c10::impl::ExcludeDispatchKeyGuard guard{c10::DispatchKey::AutocastCPU};
};

bool bf16_autocast() { return compat::autocast_cpu_dtype() == at::kBFloat16; }

// Another autocast dtype (float16 on the CPU, which salt-cpp never asks for): as
// autocast casts, without emulation.
at::Tensor lower(const at::Tensor& t) {
  if (!t.defined() || t.scalar_type() != at::kFloat) return t;
  return t.to(compat::autocast_cpu_dtype());
}
c10::optional<at::Tensor> lower(const c10::optional<at::Tensor>& t) {
  if (!t || !t->defined()) return t;
  return lower(*t);
}

template <class F, class... Args>
at::Tensor run(F&& op, const Args&... args) {
  BelowAutocast below;
  if (!bf16_autocast()) return op(lower(args)...);
  return op(bf16_values(args)...).to(at::kBFloat16);
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const c10::optional<at::Tensor>& b) {
  return run([](const auto& x, const auto& w, const auto& b) { return at::linear(x, w, b); }, x, w, b);
}
at::Tensor matmul(const at::Tensor& a, const at::Tensor& b) {
  return run([](const auto& a, const auto& b) { return at::matmul(a, b); }, a, b);
}
at::Tensor mm(const at::Tensor& a, const at::Tensor& b) {
  return run([](const auto& a, const auto& b) { return at::mm(a, b); }, a, b);
}
at::Tensor bmm(const at::Tensor& a, const at::Tensor& b) {
  return run([](const auto& a, const auto& b) { return at::bmm(a, b); }, a, b);
}
at::Tensor addmm(const at::Tensor& s, const at::Tensor& a, const at::Tensor& b, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  return run([&](const auto& s, const auto& a, const auto& b) { return at::addmm(s, a, b, beta, alpha); }, s, a, b);
}
at::Tensor baddbmm(const at::Tensor& s, const at::Tensor& a, const at::Tensor& b, const at::Scalar& beta,
                   const at::Scalar& alpha) {
  return run([&](const auto& s, const auto& a, const auto& b) { return at::baddbmm(s, a, b, beta, alpha); }, s, a,
             b);
}
at::Tensor addbmm(const at::Tensor& s, const at::Tensor& a, const at::Tensor& b, const at::Scalar& beta,
                  const at::Scalar& alpha) {
  return run([&](const auto& s, const auto& a, const auto& b) { return at::addbmm(s, a, b, beta, alpha); }, s, a, b);
}

std::unique_ptr<torch::Library> register_kernels() {
  compat::QuietWarnings quiet;  // LibTorch warns that each kernel replaces autocast's: that is the point
  auto lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten",
                                              c10::DispatchKey::AutocastCPU, __FILE__, __LINE__);
  lib->impl("linear", TORCH_FN(linear));
  lib->impl("matmul", TORCH_FN(matmul));
  lib->impl("mm", TORCH_FN(mm));
  lib->impl("bmm", TORCH_FN(bmm));
  lib->impl("addmm", TORCH_FN(addmm));
  lib->impl("baddbmm", TORCH_FN(baddbmm));
  lib->impl("addbmm", TORCH_FN(addbmm));
  return lib;
}

std::atomic<bool>& emulated_flag() {
  static std::atomic<bool> on{cpu_bf16_emulated_by_default()};
  return on;
}

}  // namespace

bool cpu_bf16_emulated_by_default() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return !(__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq"));
#else
  return false;
#endif
}

bool cpu_bf16_emulated() { return emulated_flag().load(); }
void set_cpu_bf16_emulated(bool emulated) { emulated_flag().store(emulated); }

void use_cpu_bf16_matmul() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!cpu_bf16_emulated()) return;
    static auto* kernels = register_kernels().release();  // for the process
    (void)kernels;
    spdlog::info("bf16-mixed on a CPU without AVX-512: matrix products round their inputs and results to bf16 and "
                 "multiply in float32 (LibTorch's bf16 fallback is ~100x slower; SALT_CPU_BF16=native to use it)");
  });
}

ScopedCpuBf16Emulation::ScopedCpuBf16Emulation() : library_(register_kernels()) {}
ScopedCpuBf16Emulation::~ScopedCpuBf16Emulation() = default;

}  // namespace salt::models
