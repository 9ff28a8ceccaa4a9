// The b-tagging performance table `salt test` prints (ATLAS evaluates with puma;
// we give the headline numbers at once): D_b = log(p_b / (f_c p_c + (1 - f_c) p_u)),
// and at the 70/77/85% b-jet efficiency working points the cut on D_b, the light-jet
// rejection and the c-jet rejection (1 / mistag efficiency), each with puma's
// binomial uncertainty and flagged when fewer than kFewJets background jets pass.
#pragma once
#include <string>
#include <vector>

#include "plot/rejection.h"

namespace salt::training {

enum class Flavour { kB, kC, kLight, kOther };

// Below this many background jets passing a cut, a rejection is a rough estimate.
inline constexpr int64_t kFewJets = 20;

struct WorkingPoint {
  double efficiency = 0;  // target b-jet efficiency
  double cut = 0;         // D_b threshold
  double light_rejection = 0, light_uncertainty = 0;
  double c_rejection = 0, c_uncertainty = 0;
  int64_t light_passing = 0, c_passing = 0;  // background jets above the cut
};

struct Performance {
  double f_c = 0.2;
  int64_t n_b = 0, n_c = 0, n_light = 0;
  std::vector<WorkingPoint> points;
};

using plot::discriminant_b;

Performance btag_performance(const std::vector<float>& pb, const std::vector<float>& pc, const std::vector<float>& pu,
                             const std::vector<Flavour>& truth, double f_c = 0.2,
                             const std::vector<double>& efficiencies = {0.70, 0.77, 0.85});

std::string format_performance(const Performance& perf, const std::string& tagger);

}  // namespace salt::training
