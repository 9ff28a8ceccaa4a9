#include "models/kernels/norm_cast.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <string>

#include "core/errors.h"
#include "core/torch_compat.h"
#include "models/kernels/norm_cast_block.h"

#if SALT_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "models/kernels/cuda/norm_cast_cuda.h"
#endif

namespace salt::models {

namespace nc = norm_cast;

namespace {

template <class T>
struct CpuIo {
  static float load(const T* p) { return static_cast<float>(*p); }
  static void store(T* p, float v) { *p = T(v); }  // c10's conversions round to nearest even, as the card's
};

// The warp of one row, lane by lane, its sums in the card's butterfly order.
template <class T>
void forward_rows_on_cpu(const float* x, T* y, float* mean, float* rstd, int64_t rows, int64_t d) {
  at::parallel_for(0, rows, 64, [&](int64_t r0, int64_t r1) {
    float v[nc::kLanes];
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * d;
      for (int l = 0; l < nc::kLanes; ++l) v[l] = nc::lane_sum(xr, d, l);
      const float m = nc::butterfly_sum(v) / static_cast<float>(d);
      for (int l = 0; l < nc::kLanes; ++l) v[l] = nc::lane_square_sum(xr, d, m, l);
      const float s = nc::inverse_std(nc::butterfly_sum(v), d);
      for (int l = 0; l < nc::kLanes; ++l) nc::lane_write<T, CpuIo<T>>(xr, y + r * d, d, m, s, l);
      mean[r] = m;
      rstd[r] = s;
    }
  });
}

template <class T>
void backward_rows_on_cpu(const float* x, const T* dy, const float* mean, const float* rstd, float* dx, int64_t rows,
                          int64_t d) {
  at::parallel_for(0, rows, 64, [&](int64_t r0, int64_t r1) {
    float a[nc::kLanes], b[nc::kLanes];
    for (int64_t r = r0; r < r1; ++r) {
      for (int l = 0; l < nc::kLanes; ++l)
        nc::lane_grad_sums<T, CpuIo<T>>(x + r * d, dy + r * d, d, mean[r], rstd[r], l, &a[l], &b[l]);
      const float sum_dy = nc::butterfly_sum(a), sum_dy_xhat = nc::butterfly_sum(b);
      for (int l = 0; l < nc::kLanes; ++l)
        nc::lane_write_grad<T, CpuIo<T>>(x + r * d, dy + r * d, dx + r * d, d, mean[r], rstd[r], sum_dy, sum_dy_xhat, l);
    }
  });
}

#if SALT_CUDA
nc::Dtype card_type(torch::ScalarType type) {
  return type == torch::kBFloat16 ? nc::Dtype::kBFloat16 : nc::Dtype::kHalf;
}

void check_norm_cast_launch(const std::string& error) {
  if (!error.empty()) throw std::runtime_error("norm and cast kernel: " + error);
}
#endif

// y = norm(x) in out_type, mean and rstd [N] float32, on x's device.
void norm_rows(const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& mean, const torch::Tensor& rstd) {
  RECORD_FUNCTION("salt::layer_norm_cast", std::vector<c10::IValue>({x}));  // seen by profilers and the tests
  const int64_t rows = x.size(0), d = x.size(1);
  if (x.is_cuda()) {
#if SALT_CUDA
    const c10::cuda::CUDAGuard guard(x.device());
    check_norm_cast_launch(nc::forward(card_type(y.scalar_type()), x.data_ptr<float>(), y.data_ptr(), mean.data_ptr<float>(),
                             rstd.data_ptr<float>(), rows, d, at::cuda::getCurrentCUDAStream().stream()));
#endif
    return;
  }
  if (y.scalar_type() == torch::kBFloat16)
    forward_rows_on_cpu(x.data_ptr<float>(), y.data_ptr<c10::BFloat16>(), mean.data_ptr<float>(),
                        rstd.data_ptr<float>(), rows, d);
  else
    forward_rows_on_cpu(x.data_ptr<float>(), y.data_ptr<c10::Half>(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
                        rows, d);
}

void norm_grad_rows(const torch::Tensor& x, const torch::Tensor& dy, const torch::Tensor& mean,
                   const torch::Tensor& rstd, const torch::Tensor& dx) {
  RECORD_FUNCTION("salt::layer_norm_cast_backward", std::vector<c10::IValue>({x, dy}));
  const int64_t rows = x.size(0), d = x.size(1);
  if (x.is_cuda()) {
#if SALT_CUDA
    const c10::cuda::CUDAGuard guard(x.device());
    check_norm_cast_launch(nc::backward(card_type(dy.scalar_type()), x.data_ptr<float>(), dy.data_ptr(), mean.data_ptr<float>(),
                              rstd.data_ptr<float>(), dx.data_ptr<float>(), rows, d,
                              at::cuda::getCurrentCUDAStream().stream()));
#endif
    return;
  }
  if (dy.scalar_type() == torch::kBFloat16)
    backward_rows_on_cpu(x.data_ptr<float>(), dy.data_ptr<c10::BFloat16>(), mean.data_ptr<float>(),
                         rstd.data_ptr<float>(), dx.data_ptr<float>(), rows, d);
  else
    backward_rows_on_cpu(x.data_ptr<float>(), dy.data_ptr<c10::Half>(), mean.data_ptr<float>(),
                         rstd.data_ptr<float>(), dx.data_ptr<float>(), rows, d);
}

class NormCast : public torch::autograd::Function<NormCast> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in, int64_t out_type) {
    const auto x = x_in.contiguous();
    const auto type = static_cast<torch::ScalarType>(out_type);
    auto y = torch::empty(x.sizes(), x.options().dtype(type));
    auto mean = torch::empty({x.size(0)}, x.options()), rstd = torch::empty({x.size(0)}, x.options());
    norm_rows(x, y, mean, rstd);
    ctx->save_for_backward({x, mean, rstd});
    ctx->saved_data["out_type"] = out_type;
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto type = static_cast<torch::ScalarType>(ctx->saved_data["out_type"].toInt());
    // Autograd may hand a float32 gradient (a caller that cast y up): the type y had.
    const auto dy = grads[0].to(type).contiguous();
    auto dx = torch::empty_like(saved[0]);
    norm_grad_rows(saved[0], dy, saved[1], saved[2], dx);
    return {dx, torch::Tensor()};
  }
};

bool half_type(torch::ScalarType type) { return type == torch::kBFloat16 || type == torch::kHalf; }

}  // namespace

torch::Tensor layer_norm_cast(const torch::Tensor& x, torch::ScalarType out_type) {
  if (x.dim() != 2 || x.scalar_type() != torch::kFloat || !half_type(out_type))
    throw UsageError("layer_norm_cast: takes float32 rows [N, D] and writes bf16 or half");
  if (x.is_cuda() && !norm_cast_kernel_compiled())
    throw UsageError("layer_norm_cast: salt-cpp was built without its CUDA kernels (SALT_CUDA_KERNELS=OFF)");
  return NormCast::apply(x, static_cast<int64_t>(out_type));
}

torch::Tensor layer_norm_for_product(const torch::Tensor& x, bool use_kernel) {
#if SALT_CUDA && SALT_TORCH_AT_LEAST(2, 4)
  if (!use_kernel || !norm_cast_kernel_compiled() || !x.is_cuda() || x.dim() != 2 ||
      x.scalar_type() != torch::kFloat || !at::autocast::is_autocast_enabled(at::kCUDA))
    return {};
  const auto type = at::autocast::get_autocast_dtype(at::kCUDA);
  return half_type(type) ? layer_norm_cast(x, type) : torch::Tensor();
#else
  (void)x;
  (void)use_kernel;
  return {};
#endif
}

torch::Tensor layer_norm_cast_reference(const torch::Tensor& x, torch::ScalarType out_type) {
  return torch::layer_norm(x, {x.size(-1)}, {}, {}, nc::kEps).to(out_type);
}

bool norm_cast_kernel_compiled() {
#if SALT_CUDA
  return short_attention::kernels_compiled();
#else
  return false;
#endif
}

}  // namespace salt::models
