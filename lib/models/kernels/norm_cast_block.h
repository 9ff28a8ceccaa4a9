// salt's LayerNorm (no affine parameters, eps 1e-5) of float32 rows, written in the
// half type the next matrix product takes under autocast, and its backward from
// that product's half-type gradient. Under bf16-mixed a pre-norm encoder layer runs
// layer_norm (float32 out) and then autocast's cast for the linear layer: the row
// is written in float32, read and written again in bf16; backward, the bf16
// gradient is cast to a float32 copy that layer_norm's backward reads. Here one
// pass writes the bf16 row and the backward reads the bf16 gradient itself. The
// arithmetic stays salt's: statistics, normalisation and gradient in float32, one
// rounding to the half type where the cast rounded.
//
// A row per warp on the card (norm_cast.cu): lane l takes columns l, l + 32, ...;
// a row's sums are the lanes' partial sums added as the warp's butterfly (lane i
// adds lane i ^ 16, then ^ 8, ^ 4, ^ 2, ^ 1), which the CPU runs in the same order
// (butterfly_sum), so the tests see the card's sums. Torch-free.
#pragma once
#include <cmath>
#include <cstdint>

#include "models/kernels/kernel_common.h"

namespace salt::models::norm_cast {

constexpr int kLanes = 32;
constexpr float kEps = 1e-5f;  // salt's nn.LayerNorm default

// Lane `lane`'s share of a row's sum: columns lane, lane + 32, ... of x.
SALT_HD inline float lane_sum(const float* x, int64_t d, int lane) {
  float s = 0.f;
  for (int64_t c = lane; c < d; c += kLanes) s += x[c];
  return s;
}

// Lane `lane`'s share of the row's sum of squared deviations from `mean`.
SALT_HD inline float lane_square_sum(const float* x, int64_t d, float mean, int lane) {
  float s = 0.f;
  for (int64_t c = lane; c < d; c += kLanes) {
    const float dev = x[c] - mean;
    s += dev * dev;
  }
  return s;
}

// 1 / sqrt(var + eps), correctly rounded on both sides (no rsqrtf approximation).
SALT_HD inline float inverse_std(float square_sum, int64_t d) {
  return 1.f / sqrtf(square_sum / static_cast<float>(d) + kEps);
}

// Lane `lane`'s columns of the normalised row, rounded once into y's type.
template <class Out, class OutIo>
SALT_HD void lane_write(const float* x, Out* y, int64_t d, float mean, float rstd, int lane) {
  for (int64_t c = lane; c < d; c += kLanes) OutIo::store(y + c, (x[c] - mean) * rstd);
}

// Lane `lane`'s shares of the backward's two sums: of dy, and of dy * xhat.
template <class Grad, class GradIo>
SALT_HD void lane_grad_sums(const float* x, const Grad* dy, int64_t d, float mean, float rstd, int lane,
                            float* sum_dy, float* sum_dy_xhat) {
  float a = 0.f, b = 0.f;
  for (int64_t c = lane; c < d; c += kLanes) {
    const float g = GradIo::load(dy + c);
    a += g;
    b += g * ((x[c] - mean) * rstd);
  }
  *sum_dy = a;
  *sum_dy_xhat = b;
}

// Lane `lane`'s columns of dx = rstd * (dy - mean(dy) - xhat * mean(dy * xhat)),
// layer_norm's gradient without affine parameters, in float32.
template <class Grad, class GradIo>
SALT_HD void lane_write_grad(const float* x, const Grad* dy, float* dx, int64_t d, float mean, float rstd,
                             float sum_dy, float sum_dy_xhat, int lane) {
  const float n = static_cast<float>(d), mean_dy = sum_dy / n, mean_dy_xhat = sum_dy_xhat / n;
  for (int64_t c = lane; c < d; c += kLanes) {
    const float xhat = (x[c] - mean) * rstd;
    dx[c] = rstd * (GradIo::load(dy + c) - mean_dy - xhat * mean_dy_xhat);
  }
}

// The warp's butterfly on the CPU: every lane ends with the same sum, added in the
// card's order (__shfl_xor_sync by 16, 8, 4, 2, 1; a + b == b + a in IEEE).
inline float butterfly_sum(float (&v)[kLanes]) {
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    float next[kLanes];
    for (int i = 0; i < kLanes; ++i) next[i] = v[i] + v[i ^ offset];
    for (int i = 0; i < kLanes; ++i) v[i] = next[i];
  }
  return v[0];
}

}  // namespace salt::models::norm_cast
