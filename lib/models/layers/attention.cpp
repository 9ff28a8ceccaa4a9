#include "models/layers/attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/torch_compat.h"
#include "models/kernels/attention_kernels.h"
#include "models/kernels/short_attention.h"

#if SALT_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

#include "export/layers.h"

namespace salt::models {

const config::Binding<AttentionOptions>& attention_binding() {
  using namespace config;
  static const Binding<AttentionOptions> b = [] {
    Binding<AttentionOptions> a(AttentionOptions(0));
    a.arg("num_heads", SALT_MEMBER(num_heads), "Attention heads (must divide embed_dim).", t_size())
        .unbound(field_null("attn_type", t_optional(t_str()), "Set from the encoder's attn_type.")
                     .ignored("the encoder's attn_type selects the kernel"))
        .arg("dropout", SALT_MEMBER(dropout), "Attention dropout.", t_probability())
        .arg("bias", SALT_MEMBER(bias), "Projections have a bias.")
        .arg("do_qk_norm", SALT_MEMBER(do_qk_norm), "RMSNorm per head on queries and keys.")
        .arg("do_v_norm", SALT_MEMBER(do_v_norm), "RMSNorm per head on values.")
        .arg("mup", SALT_MEMBER(mup), "muP: scores scaled by 1/head_dim, muP initialisation (set by the encoder's mup).");
    return a;
  }();
  return b;
}

bool is_valid_attn_type(const std::string& t) {
  return t == "torch-math" || t == "torch-flash" || t == "torch-meff" || t == "flash-varlen";
}

bool attn_type_uses_fused_kernel(const std::string& t) { return compat::kHasFusedAttention && t != "torch-math"; }

torch::Tensor attention_explicit(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 const torch::Tensor& key_allowed, double dropout_p, double scale) {
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * scale;
  if (key_allowed.defined()) scores = scores.masked_fill(key_allowed.logical_not(), -std::numeric_limits<float>::infinity());
  auto weights = torch::softmax(scores, -1);
  if (key_allowed.defined()) {
    // A query with no allowed key (only possible without registers) would be NaN.
    auto any = key_allowed.any(-1, /*keepdim=*/true);
    weights = weights.masked_fill(any.logical_not(), 0.0);
  }
  if (dropout_p > 0) weights = torch::dropout(weights, dropout_p, /*train=*/true);
  return torch::matmul(weights, v);
}

torch::Tensor attention_key_padded(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   const torch::Tensor& key_pad, double dropout_p, double scale) {
  const int64_t b = q.size(0), h = q.size(1), lq = q.size(2), lk = k.size(2), dh = q.size(3);
  auto bias = torch::zeros({b, 1, 1, lk}, q.options())
                  .masked_fill_(key_pad.view({b, 1, 1, lk}), -std::numeric_limits<float>::infinity())
                  .expand({b, h, 1, lk})
                  .reshape({b * h, 1, lk});
  auto scores = torch::baddbmm(bias, q.reshape({b * h, lq, dh}), k.reshape({b * h, lk, dh}).transpose(1, 2),
                               /*beta=*/1.0, /*alpha=*/scale);
  auto weights = torch::softmax(scores, -1);
  if (dropout_p > 0) weights = torch::dropout(weights, dropout_p, /*train=*/true);
  return torch::bmm(weights, v.reshape({b * h, lk, dh})).view({b, h, lq, dh});
}

namespace {

// The varlen kernel's inner loops: GCC/Clang vector extensions (8 floats), compiled
// twice — for the baseline ISA and for AVX2+FMA, picked at run time — since the
// build uses no -march and -O2 does not vectorise runtime-length loops.
#define SALT_INLINE inline __attribute__((always_inline))
typedef float v8f __attribute__((vector_size(32)));

SALT_INLINE v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
SALT_INLINE void store8(float* p, v8f v) { std::memcpy(p, &v, sizeof v); }

SALT_INLINE float dot(const float* a, const float* b, int64_t n) {
  v8f acc = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t d = 0;
  for (; d + 8 <= n; d += 8) acc += load8(a + d) * load8(b + d);
  float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

// y += alpha x
SALT_INLINE void axpy(float alpha, const float* x, float* y, int64_t n) {
  const v8f va = {alpha, alpha, alpha, alpha, alpha, alpha, alpha, alpha};
  int64_t d = 0;
  for (; d + 8 <= n; d += 8) store8(y + d, load8(y + d) + va * load8(x + d));
  for (; d < n; ++d) y[d] += alpha * x[d];
}

struct VarlenArgs {
  const float* x;       // qkv [N, 3D]
  const float* dout;    // backward: [N, D]
  float* out;           // forward: [N, D]; backward: dqkv [N, 3D]
  float* probs;         // flat P
  const int64_t* starts;
  const int64_t* order;
  const int64_t* poff;  // per jet: offset into probs
  int64_t heads, d, dh;
  float scale;
};

// Work item w = (jet b, head h).
SALT_INLINE void varlen_forward_range(const VarlenArgs& a, int64_t begin, int64_t end) {
  const int64_t d3 = 3 * a.d, dh = a.dh;
  for (int64_t w = begin; w < end; ++w) {
    const int64_t b = w / a.heads, h = w % a.heads, n = a.starts[b + 1] - a.starts[b];
    const int64_t* rows = a.order + a.starts[b];
    float* p = a.probs + a.poff[b] + h * n * n;
    for (int64_t i = 0; i < n; ++i) {
      const float* qi = a.x + rows[i] * d3 + h * dh;
      float* pi = p + i * n;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        pi[j] = a.scale * dot(qi, a.x + rows[j] * d3 + a.d + h * dh, dh);
        mx = std::max(mx, pi[j]);
      }
      float sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += (pi[j] = std::exp(pi[j] - mx));
      const float inv = 1.0f / sum;
      float* oi = a.out + rows[i] * a.d + h * dh;
      std::fill(oi, oi + dh, 0.0f);
      for (int64_t j = 0; j < n; ++j) {
        pi[j] *= inv;
        axpy(pi[j], a.x + rows[j] * d3 + 2 * a.d + h * dh, oi, dh);
      }
    }
  }
}

SALT_INLINE void varlen_backward_range(const VarlenArgs& a, int64_t begin, int64_t end) {
  const int64_t d3 = 3 * a.d, dh = a.dh;
  float dp[512];
  std::vector<float> dp_big;
  for (int64_t w = begin; w < end; ++w) {
    const int64_t b = w / a.heads, h = w % a.heads, n = a.starts[b + 1] - a.starts[b];
    const int64_t* rows = a.order + a.starts[b];
    const float* p = a.probs + a.poff[b] + h * n * n;
    float* dpj = dp;
    if (n > 512) {
      dp_big.resize(n);
      dpj = dp_big.data();
    }
    for (int64_t i = 0; i < n; ++i) {
      const float* pi = p + i * n;
      const float* doi = a.dout + rows[i] * a.d + h * dh;
      const float* qi = a.x + rows[i] * d3 + h * dh;
      float* dqi = a.out + rows[i] * d3 + h * dh;
      float delta = 0;
      for (int64_t j = 0; j < n; ++j) {
        dpj[j] = dot(doi, a.x + rows[j] * d3 + 2 * a.d + h * dh, dh);  // dO_i . v_j
        delta += pi[j] * dpj[j];
      }
      for (int64_t j = 0; j < n; ++j) {
        const float ds = pi[j] * (dpj[j] - delta) * a.scale;
        float* gj = a.out + rows[j] * d3 + h * dh;
        axpy(ds, a.x + rows[j] * d3 + a.d + h * dh, dqi, dh);  // dq_i += ds k_j
        axpy(ds, qi, gj + a.d, dh);                              // dk_j += ds q_i
        axpy(pi[j], doi, gj + 2 * a.d, dh);                      // dv_j += p_ij dO_i
      }
    }
  }
}

void varlen_forward_generic(const VarlenArgs& a, int64_t begin, int64_t end) { varlen_forward_range(a, begin, end); }
void varlen_backward_generic(const VarlenArgs& a, int64_t begin, int64_t end) { varlen_backward_range(a, begin, end); }
#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void varlen_forward_avx2(const VarlenArgs& a, int64_t begin, int64_t end) {
  varlen_forward_range(a, begin, end);
}
__attribute__((target("avx2,fma"))) void varlen_backward_avx2(const VarlenArgs& a, int64_t begin, int64_t end) {
  varlen_backward_range(a, begin, end);
}
bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
#endif

using RangeFn = void (*)(const VarlenArgs&, int64_t, int64_t);
RangeFn forward_kernel() {
#if defined(__x86_64__)
  if (has_avx2()) return varlen_forward_avx2;
#endif
  return varlen_forward_generic;
}
RangeFn backward_kernel() {
#if defined(__x86_64__)
  if (has_avx2()) return varlen_backward_avx2;
#endif
  return varlen_backward_generic;
}

// Where jet b's probabilities start in the flat P buffer: heads * sum_{b' < b} n_b'^2.
std::vector<int64_t> prob_offsets(const int64_t* starts, int64_t batch, int64_t heads) {
  std::vector<int64_t> off(batch + 1, 0);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n = starts[b + 1] - starts[b];
    off[b + 1] = off[b] + heads * n * n;
  }
  return off;
}

class VarlenAttention : public torch::autograd::Function<VarlenAttention> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv,
                               const torch::Tensor& order_in, const torch::Tensor& starts_in, int64_t heads,
                               double scale) {
    auto order = order_in.contiguous(), starts = starts_in.contiguous();
    const int64_t n_tok = qkv.size(0), d = qkv.size(1) / 3, batch = starts.size(0) - 1;
    const auto off = prob_offsets(starts.data_ptr<int64_t>(), batch, heads);
    auto probs = torch::empty({off[batch]}, qkv.options());
    auto out = torch::empty({n_tok, d}, qkv.options());
    const VarlenArgs args{qkv.data_ptr<float>(), nullptr,  out.data_ptr<float>(), probs.data_ptr<float>(),
                          starts.data_ptr<int64_t>(), order.data_ptr<int64_t>(), off.data(), heads, d, d / heads,
                          static_cast<float>(scale)};
    const RangeFn fn = forward_kernel();
    at::parallel_for(0, batch * heads, 16, [&](int64_t begin, int64_t end) { fn(args, begin, end); });
    ctx->save_for_backward({qkv, order, starts, probs});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto& qkv = saved[0];
    const auto& order = saved[1];
    const auto& starts = saved[2];
    const auto& probs = saved[3];
    const int64_t heads = ctx->saved_data["heads"].toInt();
    auto dout = grads[0].contiguous();
    const int64_t d = qkv.size(1) / 3, batch = starts.size(0) - 1;
    const auto off = prob_offsets(starts.data_ptr<int64_t>(), batch, heads);
    auto dqkv = torch::zeros_like(qkv);
    const VarlenArgs args{qkv.data_ptr<float>(),      dout.data_ptr<float>(),       dqkv.data_ptr<float>(),
                          probs.data_ptr<float>(),    starts.data_ptr<int64_t>(),   order.data_ptr<int64_t>(),
                          off.data(),                 heads,                        d,
                          d / heads,                  static_cast<float>(ctx->saved_data["scale"].toDouble())};
    const RangeFn fn = backward_kernel();
    at::parallel_for(0, batch * heads, 16, [&](int64_t begin, int64_t end) { fn(args, begin, end); });
    return {dqkv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool varlen_attention_applies(const torch::Tensor& qkv, double dropout_p) {
  return dropout_p == 0.0 && qkv.defined() && qkv.device().is_cpu() && qkv.scalar_type() == torch::kFloat32 &&
         qkv.dim() == 2;
}

torch::Tensor varlen_attention(const torch::Tensor& qkv, const torch::Tensor& order, const torch::Tensor& starts,
                               int64_t num_heads, double scale) {
  if (!varlen_attention_applies(qkv, 0.0) || qkv.size(1) % (3 * num_heads) != 0)
    throw UsageError("varlen_attention: needs a CPU float32 qkv [N, 3D] with D divisible by the number of heads");
  return VarlenAttention::apply(qkv.contiguous(), order.to(torch::kLong), starts.to(torch::kLong), num_heads, scale);
}

AttentionImpl::AttentionImpl(const AttentionOptions& options) : torch::nn::Module("Attention"), options_(options) {
  const auto d = options.embed_dim();
  if (options.num_heads() <= 0 || d % options.num_heads() != 0)
    throw UsageError("Attention: embed_dim " + std::to_string(d) + " is not divisible by num_heads " +
                     std::to_string(options.num_heads()));
  set_backend(options.attn_type());
  head_dim_ = d / options.num_heads();
  if (options.do_qk_norm()) {
    q_norm = register_module("q_norm", Norm("RMSNorm", head_dim_));
    k_norm = register_module("k_norm", Norm("RMSNorm", head_dim_));
  }
  if (options.do_v_norm()) v_norm = register_module("v_norm", Norm("RMSNorm", head_dim_));
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * d, d}));
  if (options.bias()) in_proj_bias = register_parameter("in_proj_bias", torch::empty({3 * d}));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(options.bias())));
  reset_parameters();
}

double attention_scale(int64_t head_dim, bool mup) {
  return mup ? 1.0 / static_cast<double>(head_dim) : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

void mup_init_attention(torch::Tensor& in_proj_weight, torch::Tensor& in_proj_bias, torch::nn::Linear& out_proj,
                        int64_t head_dim) {
  torch::NoGradGuard no_grad;
  const int64_t d = in_proj_weight.size(1);
  in_proj_weight.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(head_dim)));
  in_proj_weight.narrow(0, 0, d).zero_();
  out_proj->weight.normal_(0.0, std::sqrt(1.0 / static_cast<double>(d)));
  if (in_proj_bias.defined()) in_proj_bias.zero_();
  if (out_proj->bias.defined()) out_proj->bias.zero_();
}

void AttentionImpl::reset_parameters() {
  if (options_.mup()) return mup_init_attention(in_proj_weight, in_proj_bias, out_proj, head_dim_);
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) in_proj_bias.zero_();
  out_proj->reset_parameters();
}

namespace {

std::mutex kernels_mutex;
std::set<std::string>& kernels_used() {
  static std::set<std::string> used;
  return used;
}

std::string tensor_kind(const torch::Tensor& t) {
  return std::string(c10::DeviceTypeName(t.device().type(), true)) + ", " + std::string(c10::toString(t.scalar_type()));
}

#if SALT_TORCH_AT_LEAST(2, 0)
// The kernel at::scaled_dot_product_attention picks for these inputs (torch's own
// choice, sdp::SDPBackend): flash, memory-efficient, cuDNN or math.
std::string sdpa_backend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                         const torch::Tensor& allowed, double dropout_p) {
  c10::optional<torch::Tensor> mask;
  if (allowed.defined()) mask = allowed;
  switch (at::_fused_sdp_choice(q, k, v, mask, dropout_p, false)) {
    case 0: return "math";
    case 1: return "flash";
    case 2: return "memory-efficient";
    case 3: return "cudnn";
    default: return "other";
  }
}
#endif

// Each call site reports once (its first call): a flag per site, so the steady
// state costs one atomic load.
#define SALT_NOTE_KERNEL_ONCE(expr)                                  \
  do {                                                               \
    static std::atomic<bool> noted{false};                           \
    if (!noted.exchange(true)) note_attention_kernel(expr);          \
  } while (0)

#if SALT_CUDA && SALT_TORCH_AT_LEAST(2, 5)
// Flash attention's varlen kernel takes half-precision rows on an sm80+ card, with
// a head size it was built for.
bool flash_varlen_applies(const torch::Tensor& qkv, int64_t heads, double dropout) {
  if (!qkv.is_cuda() || (qkv.scalar_type() != torch::kBFloat16 && qkv.scalar_type() != torch::kHalf)) return false;
  const int64_t dh = qkv.size(1) / 3 / heads;
  const auto props = at::cuda::getCurrentDeviceProperties();
  return dh % 8 == 0 && dh <= 256 && props->major >= 8 && dropout == 0.0;
}

// Sequences one flash call takes: its grid has a y-block per sequence, and CUDA
// allows 65535 (a batch of 128000 failed with "invalid argument").
constexpr int64_t kMaxFlashSequences = 65535;

// qkv [N, 3D] packed rows -> [N, D]: rows sorted jet by jet (layout.order; the
// encoder's rows come sorted already), one varlen sequence per jet (cumulative
// lengths layout.starts), then put back in the packed order. q, k and v are
// strided views of qkv: the kernels take any row stride with unit last stride.
// torch's autograd differentiates _flash_attention_forward.
torch::Tensor flash_varlen(const torch::Tensor& qkv, const TokenLayout& layout, int64_t heads, double scale,
                           double dropout) {
  const int64_t n = qkv.size(0), d = qkv.size(1) / 3, dh = d / heads;
  // Jets of ~15 tokens fill a tenth of flash's 128-row tiles: salt-cpp's kernel for
  // short jets, where the forward pass chose it (ForwardKernels, forward_context.h).
  if (layout.kernels.short_attention && dropout == 0.0 && short_varlen_applies(qkv, heads, layout.length)) {
    SALT_NOTE_KERNEL_ONCE("short-varlen: salt-cpp's kernel for short jets on packed rows (" + tensor_kind(qkv) + ")");
    return layout.unsort_rows(short_varlen_attention(layout.sort_rows(qkv), layout.starts, layout.length, heads, scale));
  }
  auto jet_rows = layout.sort_rows(qkv).view({n, 3, heads, dh});
  auto q = jet_rows.select(1, 0), k = jet_rows.select(1, 1), v = jet_rows.select(1, 2);
  auto call = [&](const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& starts) {
    const auto cum = starts.to(torch::kInt);
    return std::get<0>(at::_flash_attention_forward(q, k, v, cum, cum, layout.length, layout.length, dropout,
                                                    /*is_causal=*/false, /*return_debug_mask=*/false, scale));
  };
  SALT_NOTE_KERNEL_ONCE("flash-varlen: flash attention on packed rows (" + tensor_kind(q) + ")");
  torch::Tensor out;
  if (layout.batch <= kMaxFlashSequences) {
    out = call(q, k, v, layout.starts);
  } else {
    // The kernels' grid has one y-block per sequence (CUDA allows 65535): slices of
    // jets, whose rows are contiguous here. One host read of the slice boundaries.
    const auto starts = layout.starts.cpu();
    const auto* row = starts.data_ptr<int64_t>();
    std::vector<torch::Tensor> parts;
    for (int64_t j0 = 0; j0 < layout.batch; j0 += kMaxFlashSequences) {
      const int64_t j1 = std::min(layout.batch, j0 + kMaxFlashSequences), r0 = row[j0], rows = row[j1] - r0;
      parts.push_back(call(q.narrow(0, r0, rows), k.narrow(0, r0, rows), v.narrow(0, r0, rows),
                           layout.starts.narrow(0, j0, j1 - j0 + 1) - r0));
    }
    out = torch::cat(parts, 0);
  }
  return layout.unsort_rows(out.reshape({n, d}));
}
#endif

}  // namespace

void note_attention_kernel(const std::string& kernel) {
  std::lock_guard<std::mutex> lock(kernels_mutex);
  kernels_used().insert(kernel);
}

std::vector<std::string> attention_kernels_used() {
  std::lock_guard<std::mutex> lock(kernels_mutex);
  return {kernels_used().begin(), kernels_used().end()};
}

void AttentionImpl::set_backend(const std::string& attn_type) {
  if (!is_valid_attn_type(attn_type))
    throw UsageError("Attention: unknown attn_type '" + attn_type +
                     "' (choose from torch-math, torch-flash, torch-meff, flash-varlen)");
  options_.attn_type(attn_type);
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& pad_mask) {
  const auto b = x.size(0), l = x.size(1), d = x.size(2);
  auto qkv = torch::nn::functional::linear(x, in_proj_weight, in_proj_bias).chunk(3, -1);
  auto heads = [&](const torch::Tensor& t) { return t.view({b, l, options_.num_heads(), head_dim_}).transpose(1, 2); };
  auto q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  if (v_norm) v = v_norm->forward(v);

  // [B, 1, 1, L]: whether each key (sender) is a real token.
  torch::Tensor allowed;
  if (pad_mask.defined()) allowed = pad_mask.logical_not().view({b, 1, 1, l});
  const double dropout = is_training() ? options_.dropout() : 0.0;
  torch::Tensor out;
#if SALT_TORCH_AT_LEAST(2, 0)
  if (attn_type_uses_fused_kernel(options_.attn_type()) && !options_.mup()) {  // fused: 1/sqrt(dh) only
    auto mask = allowed.defined() ? allowed.expand({b, 1, l, l}) : allowed;
    SALT_NOTE_KERNEL_ONCE("scaled_dot_product_attention: " + sdpa_backend(q, k, v, mask, dropout) + " (" +
                          tensor_kind(q) + ")");
    out = compat::fused_attention(q.contiguous(), k.contiguous(), v.contiguous(), mask, dropout);
  }
#endif
  if (!out.defined()) {
    SALT_NOTE_KERNEL_ONCE("explicit masked softmax (" + tensor_kind(q) + ")");
    out = attention_explicit(q, k, v, allowed, dropout, attention_scale(head_dim_, options_.mup()));
  }
  return out_proj->forward(out.transpose(1, 2).reshape({b, l, d}));
}

torch::Tensor AttentionImpl::forward_cross(const torch::Tensor& x, const torch::Tensor& kv, const torch::Tensor& kv_mask,
                                           const torch::Tensor& attn_mask) {
  const auto b = x.size(0), lq = x.size(1), lk = kv.size(1), d = x.size(2);
  namespace F = torch::nn::functional;
  auto w = in_proj_weight.split(d, 0);
  std::vector<torch::Tensor> bias(3);
  if (in_proj_bias.defined()) bias = in_proj_bias.split(d, 0);
  auto heads = [&](const torch::Tensor& t, int64_t l) {
    return t.view({b, l, options_.num_heads(), head_dim_}).transpose(1, 2);
  };
  auto q = heads(F::linear(x, w[0], bias[0]), lq);
  auto k = heads(F::linear(kv, w[1], bias[1]), lk), v = heads(F::linear(kv, w[2], bias[2]), lk);
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  if (v_norm) v = v_norm->forward(v);
  // salt's merge_masks: padded keys never send, combined with the attention mask.
  torch::Tensor allowed;
  if (kv_mask.defined()) allowed = kv_mask.logical_not().view({b, 1, 1, lk}).expand({b, 1, lq, lk});
  if (attn_mask.defined()) {
    auto a = attn_mask.view({b, 1, lq, lk});
    allowed = allowed.defined() ? allowed & a : a;
  }
  const double dropout = is_training() ? options_.dropout() : 0.0;
  SALT_NOTE_KERNEL_ONCE("explicit masked softmax, cross attention (" + tensor_kind(q) + ")");
  auto out = attention_explicit(q, k, v, allowed, dropout, attention_scale(head_dim_, options_.mup()));
  return out_proj->forward(out.transpose(1, 2).reshape({b, lq, d}));
}

torch::Tensor AttentionImpl::forward_packed(const torch::Tensor& x, const TokenLayout& layout) {
  const auto projected = torch::nn::functional::linear(x, in_proj_weight, in_proj_bias);
  // Static rows: the kernels read each jet's rows from layout.starts and leave the
  // padding rows after them unwritten, forward and backward; zeros in and out keep
  // that memory out of the results and the gradients.
  return out_proj->forward(layout.zero_padding(attend_packed(layout.zero_padding(projected), layout)));
}

torch::Tensor AttentionImpl::attend_packed(const torch::Tensor& projected, const TokenLayout& layout) {
  const int64_t b = layout.batch, l = layout.length, d = projected.size(1) / 3, h = options_.num_heads();
  const double dropout = is_training() ? options_.dropout() : 0.0;
  const double scale = attention_scale(head_dim_, options_.mup());
  // CPU float32 without q/k/v norms: the varlen kernel straight on the packed rows.
  // Not for static rows, which exist for CUDA graphs: every shape must follow the
  // bucket, and this kernel's buffers follow each batch's jet lengths. Bucketed rows
  // (forward_context.h: CPU bf16 steps, for oneDNN's shapes) keep it: the padding
  // rows follow every jet's in `order`, after starts[B], so the kernel never reads
  // them, leaves their output unwritten and their gradient zero, and forward_packed
  // zeroes them. Under CPU bf16 autocast the same kernel runs
  // in float32 on the bf16 rows and its output is rounded to bf16, as flash attention
  // computes on a card (scores and softmax in float32); the padded path below would
  // run per-jet bf16 batched products, with casts around each where the CPU has no
  // bf16 instructions (cpu_bf16.h).
  if (!q_norm && !v_norm && (!layout.row_valid.defined() || layout.kernels.bucketed_rows) && dropout == 0.0) {
    const bool cpu_bf16 = projected.scalar_type() == torch::kBFloat16 && projected.device().is_cpu();
    const auto rows = cpu_bf16 ? projected.to(torch::kFloat) : projected;
    if (varlen_attention_applies(rows, dropout)) {
      SALT_NOTE_KERNEL_ONCE("varlen (salt-cpp's kernel on packed rows, " + tensor_kind(projected) + ")");
      const auto out = varlen_attention(rows, layout.order, layout.starts, h, scale);
      return cpu_bf16 ? out.to(torch::kBFloat16) : out;
    }
  }
#if SALT_CUDA && SALT_TORCH_AT_LEAST(2, 5)
  // salt's flash-varlen on a GPU: flash attention straight on the packed rows, each
  // jet's tokens a sequence of its own (no padding, no mask).
  if (options_.attn_type() == "flash-varlen" && !q_norm && !v_norm && flash_varlen_applies(projected, h, dropout))
    return flash_varlen(projected, layout, h, scale, dropout);
#endif
  // One fused projection on the packed tokens, then [B, Lc, 3, H, Dh] -> q, k, v [B, H, Lc, Dh].
  auto qkv = layout.scatter(projected)
                 .view({b, l, 3, h, head_dim_})
                 .permute({2, 0, 3, 1, 4});
  auto q = qkv[0], k = qkv[1], v = qkv[2];
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  if (v_norm) v = v_norm->forward(v);
  torch::Tensor out;
#if SALT_TORCH_AT_LEAST(2, 0)
  if (attn_type_uses_fused_kernel(options_.attn_type()) && !options_.mup()) {  // fused: 1/sqrt(dh) only
    auto mask = layout.pad_mask.logical_not().view({b, 1, 1, l}).expand({b, 1, l, l});
    SALT_NOTE_KERNEL_ONCE("scaled_dot_product_attention: " + sdpa_backend(q, k, v, mask, dropout) + " (" +
                          tensor_kind(q) + ")");
    out = compat::fused_attention(q.contiguous(), k.contiguous(), v.contiguous(), mask, dropout);
  }
#endif
  if (!out.defined()) {
    SALT_NOTE_KERNEL_ONCE("key-padded masked softmax (" + tensor_kind(q) + ")");
    out = attention_key_padded(q, k, v, layout.pad_mask, dropout, scale);
  }
  return layout.gather(out.transpose(1, 2).reshape({b * l, d}));
}


ox::Value split_heads_onnx(ox::Graph& g, const ox::Value& x, int64_t num_heads, int64_t head_dim) {
  return g.op("Transpose", {g.op("Reshape", {x, g.ints({0, num_heads, head_dim})})}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
}

ox::Value merge_heads_onnx(ox::Graph& g, const ox::Value& x, int64_t embed_dim) {
  return g.op("Reshape", {g.op("Transpose", {x}, {{"perm", std::vector<int64_t>{1, 0, 2}}}), g.ints({0, embed_dim})});
}

ox::Value AttentionImpl::to_onnx(ox::Graph& g, const ox::Value& x) {
  auto qkv = g.op_n("Split", {ox::linear(g, x, in_proj_weight, in_proj_bias)}, 3, {{"axis", int64_t{-1}}});
  return attend_onnx(g, qkv[0], qkv[1], qkv[2], {});
}

ox::Value AttentionImpl::cross_to_onnx(ox::Graph& g, const ox::Value& x, const ox::Value& kv, const ox::Value& allowed) {
  const int64_t d = options_.embed_dim();
  auto w = in_proj_weight.split(d, 0);
  std::vector<torch::Tensor> bias(3);
  if (in_proj_bias.defined()) bias = in_proj_bias.split(d, 0);
  return attend_onnx(g, ox::linear(g, x, w[0], bias[0]), ox::linear(g, kv, w[1], bias[1]), ox::linear(g, kv, w[2], bias[2]),
                     allowed);
}

ox::Value AttentionImpl::attend_onnx(ox::Graph& g, const ox::Value& q_in, const ox::Value& k_in, const ox::Value& v_in,
                                     const ox::Value& allowed) {
  const int64_t d = options_.embed_dim(), h = options_.num_heads();
  auto q = split_heads_onnx(g, q_in, h, head_dim_), k = split_heads_onnx(g, k_in, h, head_dim_),
       v = split_heads_onnx(g, v_in, h, head_dim_);
  if (q_norm) {
    q = q_norm->to_onnx(g, q);
    k = k_norm->to_onnx(g, k);
  }
  if (v_norm) v = v_norm->to_onnx(g, v);
  auto kt = g.op("Transpose", {k}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  auto scores = g.op("Mul", {g.op("MatMul", {q, kt}), g.scalar(float(attention_scale(head_dim_, options_.mup())))});
  if (!allowed.empty())  // [Lq, Lk] broadcasts over the heads
    scores = g.op("Where", {allowed, scores, g.scalar(-std::numeric_limits<float>::infinity())});
  auto out = g.op("MatMul", {g.op("Softmax", {scores}, {{"axis", int64_t{-1}}}), v});  // [H, L, Dh]
  return ox::linear(g, merge_heads_onnx(g, out, d), out_proj);
}

}  // namespace salt::models
