// The arithmetic of Lightning's learning rate finder (lightning.pytorch.tuner.
// lr_finder), apart from the trial that trains: the learning rate of each step,
// the smoothed loss with its early stop, and the suggestion (the steepest
// descent of the loss). Torch-free, so it is checked in milliseconds.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace salt::training {

// _ExponentialLR / _LinearLR from min_lr to max_lr over `steps`: step 0 uses
// min_lr, step i >= 1 uses r = (i + 1) / steps of the way (Lightning's
// schedulers count one ahead after the first step), the last step max_lr.
struct LrSweep {
  double min_lr = 1e-8, max_lr = 1;
  int64_t steps = 100;
  bool exponential = true;
  double lr_at(int64_t step) const;
};

// _LRCallback's running loss: an exponential moving average (beta 0.98),
// debiased by the optimizer steps done; the search stops once it exceeds
// early_stop_threshold x the best seen (after the first step).
class LossSmoother {
 public:
  LossSmoother(std::optional<double> early_stop_threshold, double beta = 0.98)
      : threshold_(early_stop_threshold), beta_(beta) {}
  // `global_step`: optimizer steps done including this one. Returns the smoothed
  // loss; diverged() tells whether the search should stop here.
  double add(double loss, int64_t global_step);
  bool diverged() const { return diverged_; }

 private:
  std::optional<double> threshold_;
  double beta_;
  double avg_ = 0, best_ = 0;
  bool diverged_ = false;
};

// _LRFinder.suggestion: skipping the first skip_begin and last skip_end points
// and the non-finite losses, the index (into `losses`) of the steepest negative
// gradient of loss over learning rate (torch.gradient in float32, second-order
// central differences on the uneven grid). nullopt with fewer than two points.
std::optional<std::size_t> lr_suggestion_index(const std::vector<double>& lrs, const std::vector<double>& losses,
                                               int skip_begin = 10, int skip_end = 1);

}  // namespace salt::training
