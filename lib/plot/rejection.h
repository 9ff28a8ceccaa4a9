// Background rejection as a function of the b-jet efficiency, as puma computes
// and draws it: for each target efficiency the cut on D_b is the b jets' (1 - eff)
// quantile (numpy's linear percentile), the rejection is N_bkg / N_bkg passing,
// and its statistical uncertainty is the binomial one of the mistag rate
// propagated to the rejection: rej^2 * sqrt(e (1 - e) / N), e = 1 / rej.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "plot/figure.h"

namespace salt::plot {

// The b-tagging discriminant D_b = log(p_b / (f_c p_c + (1 - f_c) p_u)); a tiny
// floor keeps it finite for saturated probabilities (as puma's epsilon does).
double discriminant_b(double pb, double pc, double pu, double f_c);

struct RejectionCurve {
  std::string background;  // "light" or "c"
  int64_t n_background = 0;
  std::vector<double> b_efficiency, rejection, uncertainty;
  std::vector<int64_t> passing;  // background jets passing each cut
};

// b-efficiency grid puma uses by default for these plots: 0.49 to 1 in 0.01 steps.
std::vector<double> default_efficiencies();

// The cut on `b_scores` keeping a fraction `efficiency` of them (sorted ascending).
double cut_for_efficiency(const std::vector<double>& sorted_b_scores, double efficiency);

// Rejections of `background_scores` at the cuts that keep each efficiency of the
// b jets. A cut no background jet passes gives rejection +inf and no uncertainty.
RejectionCurve rejection_curve(const std::vector<double>& b_scores, const std::vector<double>& background_scores,
                               const std::vector<double>& efficiencies, const std::string& background);

// puma's uncertainty of a rejection `rej` measured on `n` background jets.
double rejection_uncertainty(double rej, int64_t n);

// One tagger's light and c rejection curves with their bands, log y; `text`
// lines (sample, jet counts) at the top left.
struct TaggerCurves {
  std::string tagger;
  RejectionCurve light, c;
};
Figure rejection_figure(const std::vector<TaggerCurves>& taggers, const std::vector<std::string>& text);

}  // namespace salt::plot
