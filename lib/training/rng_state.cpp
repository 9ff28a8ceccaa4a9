#include "training/rng_state.h"

#include <ATen/CPUGeneratorImpl.h>

namespace salt::training {

torch::Tensor cpu_rng_state() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_cpu_rng_state(const torch::Tensor& state) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

}  // namespace salt::training

namespace salt::training {

RngSnapshot::RngSnapshot(const torch::Device& device) : device_(device), cpu_(cpu_rng_state()) {
  if (device.is_cpu()) return;
  auto gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  device_state_ = gen.get_state();
}

void RngSnapshot::restore() const {
  set_cpu_rng_state(cpu_);
  if (!device_state_.defined()) return;
  auto gen = at::globalContext().defaultGenerator(device_);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(device_state_);
}

}  // namespace salt::training
