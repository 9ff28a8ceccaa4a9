#include "training/optim/muon.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>

#include "core/torch_compat.h"
#include "training/optim/optimizer_closure.h"

namespace salt::training {
namespace {

double adjusted_lr(double lr, MuonLrAdjust mode, const torch::Tensor& p) {
  const auto rows = static_cast<double>(p.size(0)), cols = static_cast<double>(p.size(1));
  if (mode == MuonLrAdjust::kMatchRmsAdamW) return lr * 0.2 * std::sqrt(std::max(rows, cols));
  return lr * std::sqrt(std::max(1.0, rows / cols));
}

void muon_update(torch::Tensor& p, const torch::Tensor& grad, torch::Tensor& buf, const MuonOptions& o) {
  buf.lerp_(grad, 1.0 - o.momentum());
  auto update = o.nesterov() ? grad.lerp(buf, o.momentum()) : buf;
  update = zeropower_via_newtonschulz(update, o.ns_coefficients(), o.ns_steps(), o.eps());
  p.mul_(1.0 - o.lr() * o.weight_decay());
  p.add_(update, -adjusted_lr(o.lr(), o.adjust_lr(), p));  // bf16 update, promoted to p's dtype
}

}  // namespace

torch::Tensor zeropower_via_newtonschulz(const torch::Tensor& update, const MuonOptions::coefficients_t& abc,
                                         int64_t steps, double eps) {
  TORCH_CHECK(update.dim() == 2, "Newton-Schulz needs a 2-D matrix, got ", update.sizes());
  const auto [a, b, c] = abc;
  const bool tall = update.size(0) > update.size(1);
  auto x = update.to(torch::kBFloat16);
  if (tall) x = x.t();
  x = x.div(x.norm().clamp_min(eps));  // spectral norm at most 1
  // torch writes `b * G + c * G @ G` and `a * X + GU @ X`: Python evaluates
  // (c * G) @ G, so the scalar products are rounded to bf16 before the matmul.
  for (int64_t i = 0; i < steps; ++i) {
    auto gram = x.matmul(x.t());
    auto gram_update = gram.mul(b).add(gram.mul(c).matmul(gram));
    x = x.mul(a).add(gram_update.matmul(x));
  }
  return tall ? x.t() : x;
}

Muon::Muon(std::vector<torch::Tensor> params, const MuonOptions& defaults)
    : Optimizer({torch::optim::OptimizerParamGroup(std::move(params))}, std::make_unique<MuonOptions>(defaults)) {
  for (const auto& p : param_groups_.front().params())
    TORCH_CHECK(p.dim() == 2, "Muon only supports 2D parameters, got one of size ", p.sizes());
}

torch::Tensor Muon::step(LossClosure closure) {
  auto loss = evaluate_closure(closure);
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const MuonOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& slot = state_[compat::optimizer_state_key(state_, p)];
      if (!slot) {
        auto fresh = std::make_unique<MuonParamState>();
        fresh->momentum_buffer(torch::zeros_like(p.grad()));
        slot = std::move(fresh);
      }
      muon_update(p, p.grad(), static_cast<MuonParamState&>(*slot).momentum_buffer(), options);
    }
  }
  return loss;
}

bool is_muon_param(const std::string& name, const torch::Tensor& param) {
  static const std::regex excluded[] = {
      std::regex(R"(\bbias\b)"),
      std::regex(R"(layernorm|layer_norm|\bln\d*\b|norm)"),
      std::regex(R"(embedding|embeddings|\bembed\b)"),
      std::regex(R"(\bhead\b|classifier|output|out_proj|final)"),
  };
  if (!param.requires_grad() || param.dim() != 2) return false;
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return std::none_of(std::begin(excluded), std::end(excluded),
                      [&](const std::regex& re) { return std::regex_search(lower, re); });
}

}  // namespace salt::training
