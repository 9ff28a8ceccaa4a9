// What an epoch cost: its wall time, the part of it spent waiting for the loader,
// the peak host memory (RSS) and, on a GPU, the caching allocator's peak memory.
// fit() logs one line per stage and keeps the figures in metadata.yaml
// (`resources`), so a slow or memory-bound run says why. Torch-free.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace salt::training {

struct EpochResources {
  std::string stage;  // "train" or "val"
  int64_t epoch = 0;
  double seconds = 0;            // the stage's wall time
  double data_wait_seconds = 0;  // of which blocked waiting for the next batch
  double peak_host_rss_mb = 0;   // VmHWM during the stage (whole run where it cannot be reset)
  std::optional<double> peak_gpu_allocated_mb, peak_gpu_reserved_mb;

  double data_wait_share() const { return seconds > 0 ? data_wait_seconds / seconds : 0; }
  // "train epoch 0: 12.3 s, waiting for data 0.4 s (3.3%), peak host RSS 812 MiB,
  // peak GPU memory 2345 MiB allocated / 3000 MiB reserved"
  std::string summary() const;
};

// Measures one stage at a time: start() resets the peaks, the loop reports each
// wait for a batch, finish() returns the figures. `cuda_device` < 0: no GPU.
class ResourceMeter {
 public:
  explicit ResourceMeter(int cuda_device = -1) : cuda_device_(cuda_device) {}
  void start(const std::string& stage, int64_t epoch);
  void add_data_wait(double seconds) { figures_.data_wait_seconds += seconds; }
  EpochResources finish();

 private:
  int cuda_device_;
  double started_ = 0;
  EpochResources figures_;
};

}  // namespace salt::training
