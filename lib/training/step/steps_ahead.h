// How far the host may run ahead of the card. A training step that reads no
// device value (models/packing/host_read.h) lets the host issue the next steps while the
// card still works on earlier ones, as deep as CUDA's launch queue goes; the
// batches' pinned host buffers are then held until the card reaches their copies.
// StepsAhead records an event at the end of each issued step and, once more than
// `depth` steps are outstanding, waits for the oldest: the card always has the
// next step queued, and the host never gets further ahead than `depth` steps.
// Torch-free header; without CUDA (or with depth 0) it does nothing.
#pragma once
#include <cstdint>
#include <memory>

namespace salt::cuda {

class StepsAhead {
 public:
  explicit StepsAhead(int depth = 0);
  ~StepsAhead();
  StepsAhead(StepsAhead&&) noexcept;
  StepsAhead& operator=(StepsAhead&&) noexcept;

  // A step was issued on `device`'s current stream; waits while more than depth
  // steps are unfinished on the card.
  void step_issued(int device);
  int depth() const { return depth_; }
  int64_t steps() const { return steps_; }
  int64_t waits() const { return waits_; }  // steps that found the oldest still unfinished

 private:
  struct Events;
  int depth_ = 0;
  int64_t steps_ = 0, waits_ = 0;
  std::unique_ptr<Events> events_;
};

// SALT_MAX_STEPS_AHEAD (StepOptions::steps_ahead, step_options.h) is the depth salt
// fit uses on a card (default 0: no limit).

}  // namespace salt::cuda
