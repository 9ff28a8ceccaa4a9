#include "training/step/steps_ahead.h"

#include <deque>

#if SALT_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace salt::cuda {

struct StepsAhead::Events {
#if SALT_CUDA
  std::deque<at::cuda::CUDAEvent> pending;
#endif
};

StepsAhead::StepsAhead(int depth) : depth_(depth), events_(std::make_unique<Events>()) {}
StepsAhead::~StepsAhead() = default;
StepsAhead::StepsAhead(StepsAhead&&) noexcept = default;
StepsAhead& StepsAhead::operator=(StepsAhead&&) noexcept = default;

void StepsAhead::step_issued(int device) {
  ++steps_;
#if SALT_CUDA
  if (depth_ <= 0 || device < 0) return;
  auto& pending = events_->pending;
  pending.emplace_back();
  pending.back().record(at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)));
  while (static_cast<int>(pending.size()) > depth_) {
    if (!pending.front().query()) {
      ++waits_;
      pending.front().synchronize();
    }
    pending.pop_front();
  }
#else
  (void)device;
#endif
}

}  // namespace salt::cuda
