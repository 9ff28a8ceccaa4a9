#include "plot/rejection.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace salt::plot {

double discriminant_b(double pb, double pc, double pu, double f_c) {
  const double eps = 1e-10;
  return std::log((pb + eps) / (f_c * pc + (1 - f_c) * pu + eps));
}

std::vector<double> default_efficiencies() {
  std::vector<double> effs;
  for (int i = 49; i <= 100; ++i) effs.push_back(i / 100.0);
  return effs;
}

double cut_for_efficiency(const std::vector<double>& sorted, double efficiency) {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = (1.0 - efficiency) * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(std::max(pos, 0.0)));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double rejection_uncertainty(double rej, int64_t n) {
  if (n <= 0 || !std::isfinite(rej) || rej <= 0) return std::numeric_limits<double>::quiet_NaN();
  const double e = 1.0 / rej;
  return rej * rej * std::sqrt(e * (1 - e) / static_cast<double>(n));
}

RejectionCurve rejection_curve(const std::vector<double>& b_scores, const std::vector<double>& background_scores,
                               const std::vector<double>& efficiencies, const std::string& background) {
  RejectionCurve curve;
  curve.background = background;
  curve.n_background = static_cast<int64_t>(background_scores.size());
  if (b_scores.empty() || background_scores.empty()) return curve;
  std::vector<double> b = b_scores, bkg = background_scores;
  std::sort(b.begin(), b.end());
  std::sort(bkg.begin(), bkg.end());
  for (double eff : efficiencies) {
    const double cut = cut_for_efficiency(b, eff);
    // Background jets strictly above the cut, as puma counts them.
    const auto passing = static_cast<int64_t>(bkg.end() - std::upper_bound(bkg.begin(), bkg.end(), cut));
    const double rej = passing == 0 ? std::numeric_limits<double>::infinity()
                                    : static_cast<double>(curve.n_background) / static_cast<double>(passing);
    curve.b_efficiency.push_back(eff);
    curve.rejection.push_back(rej);
    curve.uncertainty.push_back(rejection_uncertainty(rej, curve.n_background));
    curve.passing.push_back(passing);
  }
  return curve;
}

namespace {

Series curve_series(const RejectionCurve& c, const std::string& label, Colour colour, bool dashed) {
  Series s;
  s.label = label;
  s.colour = colour;
  s.dashed = dashed;
  s.x = c.b_efficiency;
  s.y = c.rejection;
  for (std::size_t i = 0; i < c.rejection.size(); ++i) {
    const double err = std::isfinite(c.uncertainty[i]) ? c.uncertainty[i] : 0.0;
    s.y_low.push_back(c.rejection[i] - err);
    s.y_high.push_back(c.rejection[i] + err);
  }
  return s;
}

}  // namespace

Figure rejection_figure(const std::vector<TaggerCurves>& taggers, const std::vector<std::string>& text) {
  Figure f;
  f.x_label = "b-jet efficiency";
  f.y_label = "Background rejection";
  f.log_y = true;
  f.text = text;
  if (!taggers.empty()) {
    const auto& e = taggers.front().light.b_efficiency;
    if (!e.empty()) f.x_min = e.front(), f.x_max = e.back();
  }
  // Light solid, c dashed, each in its own colour.
  for (std::size_t i = 0; i < taggers.size(); ++i) {
    const auto& t = taggers[i];
    f.series.push_back(curve_series(t.light, t.tagger + " light-jet rejection", cycle_colour(static_cast<int>(2 * i)), false));
    f.series.push_back(curve_series(t.c, t.tagger + " c-jet rejection", cycle_colour(static_cast<int>(2 * i + 1)), true));
  }
  return f;
}

}  // namespace salt::plot
