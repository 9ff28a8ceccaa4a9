#include "training/tuners/lr_finder.h"

#include <algorithm>
#include <cmath>

namespace salt::training {

double LrSweep::lr_at(int64_t step) const {
  if (step <= 0) return min_lr;
  const double r = static_cast<double>(step + 1) / static_cast<double>(steps);
  return exponential ? min_lr * std::pow(max_lr / min_lr, r) : min_lr + r * (max_lr - min_lr);
}

double LossSmoother::add(double loss, int64_t global_step) {
  avg_ = beta_ * avg_ + (1 - beta_) * loss;
  const double smoothed = avg_ / (1 - std::pow(beta_, static_cast<double>(global_step + 1)));
  if (threshold_ && global_step > 1 && smoothed > *threshold_ * best_) diverged_ = true;
  if (smoothed < best_ || global_step == 1) best_ = smoothed;
  return smoothed;
}

namespace {

// torch.gradient(f, spacing=[x]) along one dimension with edge_order 1, in float32.
std::vector<float> gradient(const std::vector<float>& f, const std::vector<float>& x) {
  const std::size_t n = f.size();
  std::vector<float> g(n);
  g[0] = (f[1] - f[0]) / (x[1] - x[0]);
  g[n - 1] = (f[n - 1] - f[n - 2]) / (x[n - 1] - x[n - 2]);
  for (std::size_t i = 1; i + 1 < n; ++i) {
    const float a = x[i] - x[i - 1], b = x[i + 1] - x[i];
    const float ca = -b / (a * (a + b)), cb = (b - a) / (a * b), cc = a / (b * (a + b));
    g[i] = ca * f[i - 1] + cb * f[i] + cc * f[i + 1];
  }
  return g;
}

}  // namespace

std::optional<std::size_t> lr_suggestion_index(const std::vector<double>& lrs, const std::vector<double>& losses,
                                               int skip_begin, int skip_end) {
  // Python's [skip_begin:-skip_end] of the recorded points.
  const auto n = static_cast<int64_t>(std::min(lrs.size(), losses.size()));
  const int64_t end = n - skip_end;
  std::vector<std::size_t> kept;
  std::vector<float> f, x;
  for (int64_t i = skip_begin; i < end; ++i) {
    const auto loss = static_cast<float>(losses[static_cast<std::size_t>(i)]);
    if (!std::isfinite(loss)) continue;
    kept.push_back(static_cast<std::size_t>(i));
    f.push_back(loss);
    x.push_back(static_cast<float>(lrs[static_cast<std::size_t>(i)]));
  }
  if (f.size() < 2) return std::nullopt;
  const auto g = gradient(f, x);
  // torch.argmin: the first of equal minima; a NaN gradient counts as the minimum.
  std::size_t best = 0;
  for (std::size_t i = 1; i < g.size(); ++i) {
    if (std::isnan(g[best])) break;
    if (std::isnan(g[i]) || g[i] < g[best]) best = i;
  }
  return kept[best];
}

}  // namespace salt::training
