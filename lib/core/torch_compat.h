// The one place where LibTorch 1.13 (Debian, CI) and 2.x (pip, GPU machine) differ.
// Code elsewhere calls these wrappers instead of testing TORCH_VERSION itself.
#pragma once
#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include <optional>
#include <string>

#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#define SALT_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace salt::compat {

// True when at::scaled_dot_product_attention (fused kernels) exists: LibTorch >= 2.0.
constexpr bool kHasFusedAttention = SALT_TORCH_AT_LEAST(2, 0);

inline std::string torch_version() { return TORCH_VERSION; }

// torch.version.cuda: the CUDA runtime LibTorch was built with ("12.1"), or none
// for a CPU build (salt writes it to metadata.yaml as cuda_version, null on CPU).
inline std::optional<std::string> cuda_version() {
  const auto& hooks = at::detail::getCUDAHooks();
  if (!hooks.hasCUDA()) return std::nullopt;
  const long v = hooks.versionCUDART();  // e.g. 12010
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

#if SALT_TORCH_AT_LEAST(2, 0)
// Fused scaled-dot-product attention, q/k/v [B, H, L, Dh]; `allowed` is a bool mask
// broadcastable to [B, H, Lq, Lk], true = may attend; undefined = no mask; scale is 1/sqrt(Dh).
inline torch::Tensor fused_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                     const torch::Tensor& allowed, double dropout_p) {
  c10::optional<torch::Tensor> mask;
  if (allowed.defined()) mask = allowed;
  return at::scaled_dot_product_attention(q, k, v, mask, dropout_p);
}
#endif

// torch._foreach_lerp_(tensors, ends, weight): one fused call in LibTorch >= 2.0,
// a lerp_ per tensor before (the same arithmetic, element by element).
inline void foreach_lerp_(std::vector<torch::Tensor>& tensors, const std::vector<torch::Tensor>& ends, double weight) {
#if SALT_TORCH_AT_LEAST(2, 0)
  at::_foreach_lerp_(tensors, ends, weight);
#else
  for (std::size_t i = 0; i < tensors.size(); ++i) tensors[i].lerp_(ends[i], weight);
#endif
}

// The key of a parameter in an optimizer's state map: a string spelling the
// TensorImpl pointer in LibTorch 1.13 (as c10::guts::to_string wrote it), the
// pointer itself in 2.x. Chosen from the map's key type, not from a version number.
template <class StateMap>
typename StateMap::key_type optimizer_state_key(const StateMap&, const torch::Tensor& parameter) {
  if constexpr (std::is_same_v<typename StateMap::key_type, std::string>) {
    std::ostringstream out;
    out << parameter.unsafeGetTensorImpl();
    return out.str();
  } else {
    return parameter.unsafeGetTensorImpl();
  }
}

// Mixed precision for the forward pass: autocast on `device` to `dtype` while alive.
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device, c10::ScalarType dtype) : device_(device) {
#if SALT_TORCH_AT_LEAST(2, 4)
    previous_ = at::autocast::is_autocast_enabled(device_);
    previous_dtype_ = at::autocast::get_autocast_dtype(device_);
    at::autocast::set_autocast_dtype(device_, dtype);
    at::autocast::set_autocast_enabled(device_, true);
#else
    if (device_ == c10::DeviceType::CPU) {
      previous_ = at::autocast::is_cpu_enabled();
      previous_dtype_ = at::autocast::get_autocast_cpu_dtype();
      at::autocast::set_autocast_cpu_dtype(dtype);
      at::autocast::set_cpu_enabled(true);
    } else {
      previous_ = at::autocast::is_enabled();
      previous_dtype_ = at::autocast::get_autocast_gpu_dtype();
      at::autocast::set_autocast_gpu_dtype(dtype);
      at::autocast::set_enabled(true);
    }
#endif
    at::autocast::increment_nesting();
  }
  ~AutocastGuard() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if SALT_TORCH_AT_LEAST(2, 4)
    at::autocast::set_autocast_enabled(device_, previous_);
    at::autocast::set_autocast_dtype(device_, previous_dtype_);
#else
    if (device_ == c10::DeviceType::CPU) {
      at::autocast::set_cpu_enabled(previous_);
      at::autocast::set_autocast_cpu_dtype(previous_dtype_);
    } else {
      at::autocast::set_enabled(previous_);
      at::autocast::set_autocast_gpu_dtype(previous_dtype_);
    }
#endif
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool previous_ = false;
  c10::ScalarType previous_dtype_ = c10::ScalarType::BFloat16;
};

// The dtype CPU autocast casts to.
inline c10::ScalarType autocast_cpu_dtype() {
#if SALT_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(c10::DeviceType::CPU);
#else
  return at::autocast::get_autocast_cpu_dtype();
#endif
}

// LibTorch's warnings (TORCH_WARN) dropped while alive, for a warning that says
// what the caller means to do.
class QuietWarnings {
 public:
  QuietWarnings() : guard_(&handler_) {}

 private:
#if SALT_TORCH_AT_LEAST(2, 0)
  struct Handler : c10::WarningHandler {
    void process(const c10::Warning&) override {}
  };
  Handler handler_;
  c10::WarningUtils::WarningHandlerGuard guard_;
#else
  struct Handler : c10::WarningHandler {
    void process(const c10::SourceLocation&, const std::string&, const bool) override {}
  };
  Handler handler_;
  c10::Warning::WarningHandlerGuard guard_;
#endif
};

}  // namespace salt::compat
