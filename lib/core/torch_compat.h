// The one place where LibTorch 1.13 (Debian, CI) and 2.x (pip, GPU machine) differ.
// Code elsewhere calls these wrappers instead of testing TORCH_VERSION itself.
#pragma once
#include <torch/torch.h>
#include <torch/version.h>

#define SALT_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace salt::compat {

// True when at::scaled_dot_product_attention (fused kernels) exists: LibTorch >= 2.0.
constexpr bool kHasFusedAttention = SALT_TORCH_AT_LEAST(2, 0);

inline std::string torch_version() { return TORCH_VERSION; }

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

}  // namespace salt::compat
