#include "training/outputs/flop_counter.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <atomic>
#include <cstring>
#include <stdexcept>

namespace salt::training {
namespace {

std::atomic<double> g_flops{0.0};
std::atomic<int64_t> g_uncounted{0};
std::atomic<bool> g_active{false};
thread_local bool t_inside = false;  // the formulas below dispatch operators too

double numel_product(std::initializer_list<int64_t> dims) {
  double p = 1;
  for (int64_t d : dims) p *= static_cast<double>(d);
  return p;
}

bool is(const char* name, const char* op) { return std::strcmp(name, op) == 0; }

// 2 m k n for [.., m, k] @ [.., k, n], times the batch of bmm.
double matmul_flops(const at::Tensor& a, const at::Tensor& b) {
  if (a.dim() == 2 && b.dim() == 2) return 2 * numel_product({a.size(0), a.size(1), b.size(1)});
  if (a.dim() == 3 && b.dim() == 3) return 2 * numel_product({a.size(0), a.size(1), a.size(2), b.size(2)});
  return 0;
}

// q, k as [B, H, L, D]: the two products q k^T and p v, forward.
double sdpa_flops(const at::Tensor& q, const at::Tensor& k) {
  if (q.dim() != 4 || k.dim() != 4) return 0;
  return 4 * numel_product({q.size(0), q.size(1), q.size(2), k.size(2), q.size(3)});
}

// salt-cpp's packed attention: qkv [N, 3D] of jets starts[b] .. starts[b + 1].
double short_attention_flops(const at::Tensor& qkv, const at::Tensor& starts) {
  const auto n = starts.to(at::kLong);
  const auto lengths = n.slice(0, 1) - n.slice(0, 0, n.size(0) - 1);
  const double squares = (lengths * lengths).sum().item<double>();
  return 4 * squares * static_cast<double>(qkv.size(1) / 3);
}

const at::Tensor* tensor_at(c10::ArrayRef<const c10::IValue> inputs, std::size_t i) {
  return i < inputs.size() && inputs[i].isTensor() ? &inputs[i].toTensor() : nullptr;
}

double flops_of(const char* name, c10::ArrayRef<const c10::IValue> in) {
  auto t = [&](std::size_t i) { return tensor_at(in, i); };
  if (is(name, "aten::mm") || is(name, "aten::bmm"))
    return t(0) && t(1) ? matmul_flops(*t(0), *t(1)) : 0;
  if (is(name, "aten::addmm") || is(name, "aten::baddbmm") || is(name, "aten::_addmm_activation"))
    return t(1) && t(2) ? matmul_flops(*t(1), *t(2)) : 0;
  const bool sdpa = std::strncmp(name, "aten::_scaled_dot_product_", 26) == 0 &&
                    std::strstr(name, "_math") == nullptr;  // the math one dispatches bmm
  if (sdpa) {
    const bool backward = std::strstr(name, "_backward") != nullptr;
    // backward(grad_out, q, k, ...): four products, twice the forward's two
    if (backward) return t(1) && t(2) ? 2 * sdpa_flops(*t(1), *t(2)) : 0;
    return t(0) && t(1) ? sdpa_flops(*t(0), *t(1)) : 0;
  }
  const bool forward = is(name, "salt::short_varlen_attention");
  if (forward || is(name, "salt::short_varlen_attention_backward")) {
    if (!t(0) || !t(1)) return 0;
    if (!t(1)->device().is_cpu()) {
      ++g_uncounted;
      return 0;
    }
    return (forward ? 1 : 2) * short_attention_flops(*t(0), *t(1));
  }
  return 0;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (t_inside) return nullptr;
  t_inside = true;
  const double f = flops_of(fn.name(), fn.inputs());
  t_inside = false;
  if (f > 0) {
    double seen = g_flops.load();
    while (!g_flops.compare_exchange_weak(seen, seen + f)) {
    }
  }
  return nullptr;
}

}  // namespace

FlopCounter::FlopCounter() {
  if (g_active.exchange(true)) throw std::logic_error("FlopCounter: another counter is counting");
  g_flops = 0.0;
  g_uncounted = 0;
  handle_ = at::addGlobalCallback(
      at::RecordFunctionCallback(&on_start).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
}

FlopCounter::~FlopCounter() {
  at::removeCallback(handle_);
  g_active = false;
}

double FlopCounter::flops() const { return g_flops.load(); }
int64_t FlopCounter::uncounted() const { return g_uncounted.load(); }

}  // namespace salt::training
