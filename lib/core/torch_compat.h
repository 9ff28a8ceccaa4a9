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

}  // namespace salt::compat
