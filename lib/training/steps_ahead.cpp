#include "training/steps_ahead.h"

#include <cstdlib>
#include <deque>
#include <string>

#if SALT_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#endif

#include "core/errors.h"

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

int max_steps_ahead_from_env() {
  const char* v = std::getenv("SALT_MAX_STEPS_AHEAD");
  if (!v || !*v) return 0;
  char* end = nullptr;
  const long depth = std::strtol(v, &end, 10);
  if (*end != '\0' || depth < 0 || depth > 1000)
    throw UsageError("SALT_MAX_STEPS_AHEAD: expected a whole number from 0 to 1000, got '" + std::string(v) + "'");
  return static_cast<int>(depth);
}

}  // namespace salt::cuda
