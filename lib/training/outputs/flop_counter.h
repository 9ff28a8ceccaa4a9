// Floating-point operations counted as torch's FlopCounterMode counts them (what
// Lightning's measure_flops uses): the matrix products the operators dispatched
// while a FlopCounter lives run -- mm, addmm, bmm, baddbmm, the fused
// scaled-dot-product attentions and salt-cpp's own attention kernel
// (`salt::short_varlen_attention`), forward and backward, on every thread (the
// autograd engine runs a GPU's backward on its own threads). Elementwise work is
// not counted. salt-cpp's attention kernel on the card is left out (its jets'
// lengths live on the device; reading them would make the step wait) and counted
// in uncounted(). Observing every operator is slow: count one batch, not a run.
#pragma once
#include <cstdint>

namespace salt::training {

class FlopCounter {
 public:
  FlopCounter();   // starts counting; only one counter may live at a time
  ~FlopCounter();  // stops
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;

  double flops() const;      // counted so far
  int64_t uncounted() const;  // calls of a counted kind whose figure was left out

 private:
  uint64_t handle_ = 0;
};

}  // namespace salt::training
