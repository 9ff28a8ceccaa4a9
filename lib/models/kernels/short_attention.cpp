#include "models/kernels/short_attention.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "models/kernels/short_attention_block.h"

#if SALT_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "models/kernels/cuda/short_attention_cuda.h"
#endif

namespace salt::models {

namespace sa = short_attention;

namespace {

sa::Shape shape_of(const torch::Tensor& qkv, const torch::Tensor& out, int64_t heads, double scale, int64_t max_len) {
  sa::Shape s;
  s.qkv_stride = qkv.stride(0);
  s.out_stride = out.stride(0);
  s.d = qkv.size(1) / 3;
  s.heads = static_cast<int>(heads);
  s.dh = static_cast<int>(s.d / heads);
  s.max_len = static_cast<int>(max_len);
  s.scale = static_cast<float>(scale);
  return s;
}

// Every (jet, head) block, one at a time per CPU thread (float32).
template <class Block>
void run_blocks_on_cpu(const torch::Tensor& starts, const sa::Shape& s, int64_t floats, Block&& block) {
  const int64_t blocks = (starts.size(0) - 1) * s.heads;
  at::parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> smem(static_cast<size_t>(floats));
    for (int64_t b = b0; b < b1; ++b) block(b / s.heads, static_cast<int>(b % s.heads), smem.data());
  });
}

#if SALT_CUDA
sa::Dtype dtype_of(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kBFloat16: return sa::Dtype::kBFloat16;
    case torch::kHalf: return sa::Dtype::kHalf;
    default: return sa::Dtype::kFloat;
  }
}

void check_launch(const std::string& error) {
  if (!error.empty()) throw std::runtime_error("short attention kernel: " + error);
}
#endif

torch::Tensor forward_rows(const torch::Tensor& qkv, const torch::Tensor& starts, int64_t max_len, int64_t heads,
                           double scale) {
  RECORD_FUNCTION("salt::short_varlen_attention", std::vector<c10::IValue>({qkv, starts}));  // FLOPs (flop_counter.h)
  auto out = torch::empty({qkv.size(0), qkv.size(1) / 3}, qkv.options());
  const auto s = shape_of(qkv, out, heads, scale, max_len);
  [[maybe_unused]] const int64_t batch = starts.size(0) - 1;  // the card's grid
  if (qkv.is_cuda()) {
#if SALT_CUDA
    const c10::cuda::CUDAGuard on_its_card(qkv.device());  // a launch goes to the current device
    check_launch(sa::forward(dtype_of(qkv), qkv.data_ptr(), out.data_ptr(), starts.data_ptr<int64_t>(), batch, s,
                             at::cuda::getCurrentCUDAStream().stream()));
#endif
    return out;
  }
  const auto* x = qkv.data_ptr<float>();
  const auto* st = starts.data_ptr<int64_t>();
  auto* o = out.data_ptr<float>();
  run_blocks_on_cpu(starts, s, sa::forward_smem_floats(s.max_len, s.dh), [&](int64_t jet, int head, float* smem) {
    sa::forward_block<float, sa::FloatIo>(x, o, st, s, jet, head, 0, 1, smem);
  });
  return out;
}

torch::Tensor backward_rows(const torch::Tensor& qkv, const torch::Tensor& dout, const torch::Tensor& starts,
                            int64_t max_len, int64_t heads, double scale) {
  RECORD_FUNCTION("salt::short_varlen_attention_backward", std::vector<c10::IValue>({qkv, starts}));
  auto dqkv = torch::empty_like(qkv);  // every element belongs to one (jet, head) block
  const auto s = shape_of(qkv, dout, heads, scale, max_len);
  [[maybe_unused]] const int64_t batch = starts.size(0) - 1;  // the card's grid
  if (qkv.is_cuda()) {
#if SALT_CUDA
    const c10::cuda::CUDAGuard on_its_card(qkv.device());
    check_launch(sa::backward(dtype_of(qkv), qkv.data_ptr(), dout.data_ptr(), dqkv.data_ptr(),
                              starts.data_ptr<int64_t>(), batch, s, at::cuda::getCurrentCUDAStream().stream()));
#endif
    return dqkv;
  }
  const auto* x = qkv.data_ptr<float>();
  const auto* g = dout.data_ptr<float>();
  const auto* st = starts.data_ptr<int64_t>();
  auto* dx = dqkv.data_ptr<float>();
  run_blocks_on_cpu(starts, s, sa::backward_smem_floats(s.max_len, s.dh), [&](int64_t jet, int head, float* smem) {
    sa::backward_block<float, sa::FloatIo>(x, g, dx, st, s, jet, head, 0, 1, smem);
  });
  return dqkv;
}

class ShortVarlenAttention : public torch::autograd::Function<ShortVarlenAttention> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv,
                               const torch::Tensor& starts, int64_t max_len, int64_t heads, double scale) {
    ctx->save_for_backward({qkv, starts});
    ctx->saved_data["max_len"] = max_len;
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["scale"] = scale;
    return forward_rows(qkv, starts, max_len, heads, scale);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    if (!grads[0].defined()) return {torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    const auto saved = ctx->get_saved_variables();
    const auto& qkv = saved[0];
    const auto dout = grads[0].to(qkv.scalar_type()).contiguous();
    auto dqkv = backward_rows(qkv, dout, saved[1], ctx->saved_data["max_len"].toInt(),
                              ctx->saved_data["heads"].toInt(), ctx->saved_data["scale"].toDouble());
    return {dqkv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor short_varlen_attention(const torch::Tensor& qkv, const torch::Tensor& starts, int64_t max_len,
                                     int64_t heads, double scale) {
  if (qkv.dim() != 2 || heads < 1 || qkv.size(1) % (3 * heads) != 0)
    throw UsageError("short_varlen_attention: needs qkv [N, 3D] with D divisible by the number of heads");
  if (starts.scalar_type() != torch::kLong || starts.device() != qkv.device())
    throw UsageError("short_varlen_attention: starts must be int64 on qkv's device");
  const auto type = qkv.scalar_type();
  if (!qkv.is_cuda() && type != torch::kFloat)
    throw UsageError("short_varlen_attention: on the CPU it takes float32 rows only");
  if (qkv.is_cuda() && type != torch::kFloat && type != torch::kBFloat16 && type != torch::kHalf)
    throw UsageError("short_varlen_attention: on a card it takes float32, bfloat16 or float16 rows");
#if !SALT_CUDA
  if (qkv.is_cuda()) throw UsageError("short_varlen_attention: this build has no CUDA kernels");
#endif
  return ShortVarlenAttention::apply(qkv.contiguous(), starts.contiguous(), max_len, heads, scale);
}

bool short_varlen_applies(const torch::Tensor& qkv, int64_t heads, int64_t max_len) {
#if SALT_CUDA
  if (!sa::kernels_compiled() || !qkv.is_cuda() || heads < 1 || qkv.size(1) % (3 * heads) != 0) return false;
  const auto type = qkv.scalar_type();
  if (type != torch::kBFloat16 && type != torch::kHalf && type != torch::kFloat) return false;
  return max_len <= sa::max_supported_len(static_cast<int>(qkv.size(1) / 3 / heads));
#else
  return false;
#endif
}

}  // namespace salt::models
