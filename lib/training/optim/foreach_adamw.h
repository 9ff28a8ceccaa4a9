// torch::optim::AdamW's update with torch's multi-tensor (_foreach_*) operators:
// the same arithmetic in the same order, element for element (bitwise equal on
// the CPU, where the foreach operators run per tensor), but on a GPU a handful of
// kernel launches per step for all parameters instead of about ten per parameter.
// The state is AdamW's own (AdamWParamState per parameter), so checkpoints and
// resumes are unchanged. AMSGrad, or parameters of one group at different step
// counts, take LibTorch's per-parameter loop.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace salt::training {

class ForeachAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace salt::training
