#include "training/outputs/performance.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace salt::training {

Performance btag_performance(const std::vector<float>& pb, const std::vector<float>& pc, const std::vector<float>& pu,
                             const std::vector<Flavour>& truth, double f_c, const std::vector<double>& efficiencies) {
  Performance perf;
  perf.f_c = f_c;
  std::vector<double> db_b, db_c, db_l;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    double d = discriminant_b(pb[i], pc[i], pu[i], f_c);
    switch (truth[i]) {
      case Flavour::kB: db_b.push_back(d); break;
      case Flavour::kC: db_c.push_back(d); break;
      case Flavour::kLight: db_l.push_back(d); break;
      default: break;
    }
  }
  perf.n_b = static_cast<int64_t>(db_b.size());
  perf.n_c = static_cast<int64_t>(db_c.size());
  perf.n_light = static_cast<int64_t>(db_l.size());
  if (db_b.empty()) return perf;
  // The same computation as the rejection curves salt test draws.
  const auto light = plot::rejection_curve(db_b, db_l, efficiencies, "light");
  const auto c = plot::rejection_curve(db_b, db_c, efficiencies, "c");
  std::sort(db_b.begin(), db_b.end());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t i = 0; i < efficiencies.size(); ++i) {
    WorkingPoint p;
    p.efficiency = efficiencies[i];
    p.cut = plot::cut_for_efficiency(db_b, efficiencies[i]);
    const bool has_light = !light.rejection.empty(), has_c = !c.rejection.empty();
    p.light_rejection = has_light ? light.rejection[i] : nan;
    p.light_uncertainty = has_light ? light.uncertainty[i] : nan;
    p.light_passing = has_light ? light.passing[i] : 0;
    p.c_rejection = has_c ? c.rejection[i] : nan;
    p.c_uncertainty = has_c ? c.uncertainty[i] : nan;
    p.c_passing = has_c ? c.passing[i] : 0;
    perf.points.push_back(p);
  }
  return perf;
}

namespace {

// "3020.0 ± 1743.4!" : the flag when fewer than kFewJets background jets pass.
std::string rejection_cell(double rej, double err, int64_t passing, int64_t total, int decimals, bool& flagged) {
  char cell[64];
  if (std::isnan(rej)) return "n/a";
  if (std::isinf(rej)) {
    flagged = true;
    return "inf (none pass)!";
  }
  std::snprintf(cell, sizeof cell, "%.*f ± %.*f", decimals, rej, decimals, std::isnan(err) ? 0.0 : err);
  std::string out = cell;
  if (total > 0 && passing < kFewJets) {
    flagged = true;
    out += "!";
  }
  return out;
}

}  // namespace

std::string format_performance(const Performance& perf, const std::string& tagger) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%s b-tagging performance (f_c = %.2f; %lld b, %lld c, %lld light jets)\n",
                tagger.c_str(), perf.f_c, static_cast<long long>(perf.n_b), static_cast<long long>(perf.n_c),
                static_cast<long long>(perf.n_light));
  out += line;
  out += "  b-eff   D_b cut          light rej.            c rej.\n";
  bool flagged = false;
  for (const auto& p : perf.points) {
    const auto light = rejection_cell(p.light_rejection, p.light_uncertainty, p.light_passing, perf.n_light, 1, flagged);
    const auto c = rejection_cell(p.c_rejection, p.c_uncertainty, p.c_passing, perf.n_c, 2, flagged);
    std::snprintf(line, sizeof line, "  %4.0f%%  %8.3f  %18s  %16s\n", p.efficiency * 100, p.cut, light.c_str(), c.c_str());
    out += line;
  }
  if (flagged)
    out += "  ! fewer than " + std::to_string(kFewJets) +
           " background jets pass the cut: a rough estimate (test on more jets: data.num_test)\n";
  return out;
}

}  // namespace salt::training
