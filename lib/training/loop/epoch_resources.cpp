#include "training/loop/epoch_resources.h"

#include <fmt/format.h>

#include <chrono>

#include "core/memory.h"
#include "training/step/cuda_runtime.h"

namespace salt::training {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string EpochResources::summary() const {
  // Two decimals: a card trains 160,000 jets in ~0.9 s, where a tenth was an 11 % step in the
  // rate that bench/fit_vs_salt.sh and gpu_check derive from this line.
  std::string text = fmt::format("{} epoch {}: {:.2f} s, waiting for data {:.2f} s ({:.1f}%), peak host RSS {:.0f} MiB",
                                 stage, epoch, seconds, data_wait_seconds, 100 * data_wait_share(), peak_host_rss_mb);
  if (peak_gpu_allocated_mb)
    text += fmt::format(", peak GPU memory {:.0f} MiB allocated / {:.0f} MiB reserved", *peak_gpu_allocated_mb,
                        peak_gpu_reserved_mb.value_or(0));
  return text;
}

void ResourceMeter::start(const std::string& stage, int64_t epoch) {
  figures_ = EpochResources{};
  figures_.stage = stage;
  figures_.epoch = epoch;
  reset_peak_rss();
  if (cuda_device_ >= 0) cuda::reset_memory_peak(cuda_device_);
  started_ = now_seconds();
}

EpochResources ResourceMeter::finish() {
  figures_.seconds = now_seconds() - started_;
  figures_.peak_host_rss_mb = peak_rss_mb();
  if (cuda_device_ >= 0)
    if (const auto peak = cuda::memory_peak(cuda_device_)) {
      figures_.peak_gpu_allocated_mb = peak->allocated_mb;
      figures_.peak_gpu_reserved_mb = peak->reserved_mb;
    }
  return figures_;
}

}  // namespace salt::training
