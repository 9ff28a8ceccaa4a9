#include "models/kernels/pair_relu.h"

#include <ATen/Parallel.h>

#include <string>

#include "core/errors.h"
#include "models/kernels/pair_relu_block.h"
#include "models/kernels/segment_sum.h"

#if SALT_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "models/kernels/cuda/pair_relu_cuda.h"
#endif

namespace salt::models {

namespace {

bool pair_relu_type(torch::ScalarType type) {
  return type == torch::kBFloat16 || type == torch::kHalf || type == torch::kFloat;
}

#if SALT_CUDA
pair_relu_kernel::Dtype pair_relu_card_type(torch::ScalarType type) {
  return type == torch::kBFloat16 ? pair_relu_kernel::Dtype::kBFloat16
         : type == torch::kHalf   ? pair_relu_kernel::Dtype::kHalf
                                  : pair_relu_kernel::Dtype::kFloat;
}
#endif

// out [E, H] from p_i, p_j (unit column stride) and int64 rows on their device.
void pair_relu_rows(const torch::Tensor& p_i, const torch::Tensor& p_j, const torch::Tensor& row_i,
                    const torch::Tensor& row_j, const torch::Tensor& out) {
  RECORD_FUNCTION("salt::pair_relu", std::vector<c10::IValue>({p_i, p_j}));  // seen by profilers and the tests
  const int64_t edges = out.size(0), columns = out.size(1);
  if (p_i.is_cuda()) {
#if SALT_CUDA
    const c10::cuda::CUDAGuard guard(p_i.device());
    const auto error = pair_relu_kernel::forward(pair_relu_card_type(p_i.scalar_type()), p_i.data_ptr(), p_i.stride(0),
                                          p_j.data_ptr(), p_j.stride(0), row_i.data_ptr<int64_t>(),
                                          row_j.data_ptr<int64_t>(), out.data_ptr(), edges, columns,
                                          at::cuda::getCurrentCUDAStream().stream());
    if (!error.empty()) throw std::runtime_error("pair ReLU kernel: " + error);
#endif
    return;
  }
  const float *a = p_i.data_ptr<float>(), *b = p_j.data_ptr<float>();
  const int64_t *ri = row_i.data_ptr<int64_t>(), *rj = row_j.data_ptr<int64_t>();
  float* o = out.data_ptr<float>();
  at::parallel_for(0, edges, 256, [&](int64_t e0, int64_t e1) {
    for (int64_t e = e0; e < e1; ++e)
      for (int64_t c = 0; c < columns; ++c)
        pair_relu_kernel::edge_column<float, FloatIo>(a, p_i.stride(0), b, p_j.stride(0), ri, rj, o, columns, e, c);
  });
}

// The gradient to one side: the edges' gradients, kept where the ReLU passed,
// summed by that side's groups.
torch::Tensor pair_relu_side_grad(const torch::Tensor& g, const torch::Tensor& out, const PairSide& groups) {
  RECORD_FUNCTION("salt::pair_relu_backward", std::vector<c10::IValue>({g, out}));
  if (g.is_cuda()) return segment_sum_rows(g, groups.counts, groups.order, /*use_kernel=*/true, out);
  return segment_sum_rows_blocks_on_cpu(g, groups.counts, groups.order, out);
}

// The groups travel as plain arguments, as in models/packing/common.cpp's gathers:
// autograd takes every tensor argument for an input.
class PairRelu : public torch::autograd::Function<PairRelu> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& p_i,
                               const torch::Tensor& p_j, const torch::Tensor& row_i_in, const torch::Tensor& row_j_in,
                               const PairSide& senders, const PairSide& receivers) {
    const auto row_i = row_i_in.to(p_i.device(), torch::kLong).contiguous();
    const auto row_j = row_j_in.to(p_i.device(), torch::kLong).contiguous();
    auto out = torch::empty({row_i.size(0), p_i.size(1)}, p_i.options());
    pair_relu_rows(p_i, p_j, row_i, row_j, out);
    ctx->save_for_backward({out});
    ctx->saved_data["senders_counts"] = senders.counts;
    ctx->saved_data["receivers_counts"] = receivers.counts;
    if (senders.order.defined()) ctx->saved_data["senders_order"] = senders.order;
    if (receivers.order.defined()) ctx->saved_data["receivers_order"] = receivers.order;
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto out = ctx->get_saved_variables()[0];
    // Autograd may hand a gradient of another type (a caller that cast out): out's.
    const auto g = grads[0].to(out.scalar_type()).contiguous();
    const auto groups = [&](const std::string& side) {
      const auto order = ctx->saved_data.count(side + "_order") ? ctx->saved_data[side + "_order"].toTensor()
                                                                 : torch::Tensor();
      return PairSide{ctx->saved_data[side + "_counts"].toTensor(), order};
    };
    return {pair_relu_side_grad(g, out, groups("senders")), pair_relu_side_grad(g, out, groups("receivers")),
            torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};  // one per argument
  }
};

// p_i and p_j as the kernels read them: 2-d, one type, adjacent columns, one row per group.
bool pair_relu_shapes(const torch::Tensor& p_i, const torch::Tensor& p_j, const PairSide& senders,
                      const PairSide& receivers) {
  return p_i.dim() == 2 && p_j.dim() == 2 && p_i.scalar_type() == p_j.scalar_type() &&
         p_i.device() == p_j.device() && p_i.size(1) == p_j.size(1) && p_i.stride(1) == 1 && p_j.stride(1) == 1 &&
         senders.counts.size(0) == p_i.size(0) && receivers.counts.size(0) == p_j.size(0);
}

}  // namespace

torch::Tensor pair_relu(const torch::Tensor& p_i, const torch::Tensor& p_j, const torch::Tensor& row_i,
                        const torch::Tensor& row_j, const PairSide& senders, const PairSide& receivers) {
  if (!pair_relu_shapes(p_i, p_j, senders, receivers))
    throw UsageError("pair_relu: takes p_i and p_j [N, H] of one type and device, a count per row of each");
  if (p_i.is_cuda() ? !pair_relu_type(p_i.scalar_type()) : p_i.scalar_type() != torch::kFloat)
    throw UsageError("pair_relu: takes bf16, half or float32 rows on a card, float32 on the CPU");
  if (p_i.is_cuda() && !pair_relu_kernel_compiled())
    throw UsageError("pair_relu: salt-cpp was built without its CUDA kernels (SALT_CUDA_KERNELS=OFF)");
  return PairRelu::apply(p_i, p_j, row_i, row_j, senders, receivers);
}

bool pair_relu_takes(const torch::Tensor& p_i, const torch::Tensor& p_j, const PairSide& senders,
                     const PairSide& receivers) {
  return pair_relu_kernel_compiled() && p_i.is_cuda() && pair_relu_type(p_i.scalar_type()) &&
         pair_relu_shapes(p_i, p_j, senders, receivers);
}

torch::Tensor pair_relu_reference(const torch::Tensor& p_i, const torch::Tensor& p_j, const torch::Tensor& row_i,
                                  const torch::Tensor& row_j) {
  return torch::relu(p_i.index_select(0, row_i) + p_j.index_select(0, row_j));
}

bool pair_relu_kernel_compiled() {
#if SALT_CUDA
  return short_attention::kernels_compiled();
#else
  return false;
#endif
}

}  // namespace salt::models
