#include "models/kernels/segment_sum.h"

#include <string>

#include "core/errors.h"
#include "models/kernels/segment_sum_block.h"

#if SALT_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "models/kernels/cuda/segment_sum_cuda.h"
#endif

namespace salt::models {

namespace {

// [S + 1] int64 on counts' device: where each segment's rows start, and the end.
torch::Tensor offsets_of(const torch::Tensor& counts) {
  return torch::cat({torch::zeros({1}, counts.options()), counts.cumsum(0)});
}

#if SALT_CUDA
bool kernel_takes(const torch::Tensor& g, const torch::Tensor& keep) {
  const auto type = g.scalar_type();
  return segment_sum_kernel_compiled() && g.is_cuda() && g.dim() == 2 &&
         (type == torch::kBFloat16 || type == torch::kHalf || type == torch::kFloat) &&
         (!keep.defined() || (keep.sizes() == g.sizes() && keep.scalar_type() == type && keep.device() == g.device()));
}

torch::Tensor sum_on_card(const torch::Tensor& g_in, const torch::Tensor& counts, const torch::Tensor& order_in,
                          const torch::Tensor& keep_in) {
  const auto g = g_in.contiguous();
  const auto keep = keep_in.defined() ? keep_in.contiguous() : keep_in;
  // The kernel reads int64 indices on g's card, whatever the caller holds.
  const auto offsets = offsets_of(counts.to(g.device(), torch::kLong)).contiguous();
  const auto order = order_in.defined() ? order_in.to(g.device(), torch::kLong).contiguous() : order_in;
  auto out = torch::empty({counts.size(0), g.size(1)}, g.options());
  const c10::cuda::CUDAGuard guard(g.device());
  const auto type = g.scalar_type();
  const auto dtype = type == torch::kBFloat16 ? segment_sum::Dtype::kBFloat16
                     : type == torch::kHalf   ? segment_sum::Dtype::kHalf
                                              : segment_sum::Dtype::kFloat;
  const auto error = segment_sum::sum_rows(dtype, g.data_ptr(), order.defined() ? order.data_ptr<int64_t>() : nullptr,
                                           offsets.data_ptr<int64_t>(), out.data_ptr(), counts.size(0), g.size(1),
                                           keep.defined() ? keep.data_ptr() : nullptr,
                                           at::cuda::getCurrentCUDAStream().stream());
  if (!error.empty()) throw std::runtime_error("segment sum on the card: " + error);
  return out;
}
#endif

}  // namespace

torch::Tensor segment_sum_rows_reference(const torch::Tensor& g_in, const torch::Tensor& counts, const torch::Tensor& order,
                                         const torch::Tensor& keep) {
  const auto g = keep.defined() ? at::threshold_backward(g_in, keep, 0) : g_in;
  const auto rows = order.defined() ? g.index_select(0, order) : g;
  // unsafe: no check that the counts add up to the rows (it would wait on the device).
  auto sum = at::segment_reduce(rows.to(torch::kFloat), "sum", counts, {}, {}, 0, /*unsafe=*/true);
  return sum.to(g.scalar_type());
}

torch::Tensor segment_sum_rows_blocks_on_cpu(const torch::Tensor& g_in, const torch::Tensor& counts,
                                             const torch::Tensor& order_in, const torch::Tensor& keep_in) {
  if (!g_in.device().is_cpu() || g_in.scalar_type() != torch::kFloat || g_in.dim() != 2)
    throw UsageError("segment_sum_rows_blocks_on_cpu: takes float32 rows [R, C] on the CPU");
  if (keep_in.defined() && (keep_in.sizes() != g_in.sizes() || keep_in.scalar_type() != torch::kFloat))
    throw UsageError("segment_sum_rows_blocks_on_cpu: keep must be float32 of g's shape");
  const auto g = g_in.contiguous();
  const auto keep = keep_in.defined() ? keep_in.contiguous() : keep_in;
  const float* kept = keep.defined() ? keep.data_ptr<float>() : nullptr;
  const auto offsets = offsets_of(counts.to(torch::kLong)).contiguous();
  const auto order = order_in.defined() ? order_in.to(torch::kLong).contiguous() : order_in;
  auto out = torch::empty({counts.size(0), g.size(1)}, g.options());
  const int64_t columns = g.size(1);
  const float* rows = g.data_ptr<float>();
  const int64_t* by = order.defined() ? order.data_ptr<int64_t>() : nullptr;
  const int64_t* starts = offsets.data_ptr<int64_t>();
  float* sums = out.data_ptr<float>();
  for (int64_t s = 0; s < counts.size(0); ++s)
    for (int64_t c = 0; c < columns; ++c) segment_sum::sum_column<float, FloatIo>(rows, by, starts, sums, columns, s, c, kept);
  return out;
}

torch::Tensor segment_sum_rows(const torch::Tensor& g, const torch::Tensor& counts, const torch::Tensor& order,
                               bool use_kernel, const torch::Tensor& keep) {
#if SALT_CUDA
  if (use_kernel && kernel_takes(g, keep)) return sum_on_card(g, counts, order, keep);
#else
  (void)use_kernel;
#endif
  return segment_sum_rows_reference(g, counts, order, keep);
}

bool segment_sum_kernel_compiled() {
#if SALT_CUDA
  return short_attention::kernels_compiled();
#else
  return false;
#endif
}

}  // namespace salt::models
