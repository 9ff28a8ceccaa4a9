#include "training/checkpoints/rng_state.h"

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

void check_cpu_rng_state(const torch::Tensor& state, const std::string& what) {
  const auto expected = cpu_rng_state();
  if (state.scalar_type() != torch::kByte || state.dim() != 1)
    throw std::invalid_argument(what + " is a " + std::string(c10::toString(state.scalar_type())) + " tensor of shape " +
                                c10::str(state.sizes()) + ", not the byte vector of torch's CPU generator");
  auto scratch = at::make_generator<at::CPUGeneratorImpl>();  // tried on a generator nobody draws from
  try {
    std::lock_guard<std::mutex> lock(scratch.mutex());
    scratch.set_state(state.contiguous());
  } catch (const c10::Error&) {
    throw std::invalid_argument(what + " holds " + std::to_string(state.numel()) +
                                " bytes, not a state of torch's CPU generator (" + std::to_string(expected.numel()) +
                                " bytes)");
  }
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
