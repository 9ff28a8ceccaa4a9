// Every read of a device value on the host goes through host_read: on a GPU each
// one makes the CPU wait until the card has computed it, which stalls the queue of
// kernels a training step launches (and rules out CUDA graphs). Counting them is
// how tests hold the training step to its budget (tests/training/step/host_reads_test:
// none in a training step outside logging points, save those the model itself
// still makes, listed there).
#pragma once
#include <torch/torch.h>

#include <cstdint>

namespace salt {

// Reads made so far by this process (all threads).
int64_t host_reads();
void count_host_read();

// t.item<T>(), counted.
template <class T>
T host_read(const torch::Tensor& t) {
  count_host_read();
  return t.item<T>();
}

// The reads inside training steps that are not logging steps, which the fit loop
// reports (goal: none).
struct HostReadMeter {
  int64_t steps = 0, reads = 0, at_start = 0;
  void step_start() { at_start = host_reads(); }
  void step_done() {
    ++steps;
    reads += host_reads() - at_start;
  }
  double per_step() const { return steps > 0 ? static_cast<double>(reads) / static_cast<double>(steps) : 0.0; }
};

// t on the CPU (a copy when it lives elsewhere), counted as one read: several
// values that are needed together are read in one wait.
inline torch::Tensor host_copy(const torch::Tensor& t) {
  count_host_read();
  return t.to(torch::kCPU);
}

}  // namespace salt
