#include "training/performance.h"

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
  std::sort(db_b.begin(), db_b.end());
  auto rejection = [](const std::vector<double>& d, double cut) {
    if (d.empty()) return std::numeric_limits<double>::quiet_NaN();
    auto pass = std::count_if(d.begin(), d.end(), [&](double x) { return x > cut; });
    return pass == 0 ? std::numeric_limits<double>::infinity() : static_cast<double>(d.size()) / static_cast<double>(pass);
  };
  for (double eff : efficiencies) {
    // The cut keeping a fraction `eff` of b jets: the (1 - eff) quantile of D_b(b).
    double pos = (1.0 - eff) * static_cast<double>(db_b.size() - 1);
    auto lo = static_cast<std::size_t>(std::floor(pos));
    auto hi = std::min(lo + 1, db_b.size() - 1);
    double cut = db_b[lo] + (pos - static_cast<double>(lo)) * (db_b[hi] - db_b[lo]);
    perf.points.push_back({eff, cut, rejection(db_l, cut), rejection(db_c, cut)});
  }
  return perf;
}

std::string format_performance(const Performance& perf, const std::string& tagger) {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%s b-tagging performance (f_c = %.2f; %lld b, %lld c, %lld light jets)\n",
                tagger.c_str(), perf.f_c, static_cast<long long>(perf.n_b), static_cast<long long>(perf.n_c),
                static_cast<long long>(perf.n_light));
  out += line;
  out += "  b-eff   D_b cut   light rej.   c rej.\n";
  for (const auto& p : perf.points) {
    std::snprintf(line, sizeof line, "  %4.0f%%  %8.3f  %11.1f  %7.2f\n", p.efficiency * 100, p.cut, p.light_rejection,
                  p.c_rejection);
    out += line;
  }
  return out;
}

}  // namespace salt::training
