// Where a training step makes the CPU wait for the GPU. torch's sync debug mode
// (Python's torch.cuda.set_sync_debug_mode("warn")) warns at every synchronizing
// CUDA call: a device value read, nonzero(), a blocking copy, a stream sync. The
// probe collects those warnings per phase of one step, each with the C++ frames of
// salt-cpp that made it, and the host's time per phase when the step starts on an
// idle card (a phase that takes as long as the card's work waits on it).
// bench_model --gpu-suite prints it after its timed steps; CUDA builds only.
#pragma once
#if SALT_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Backtrace.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace salt::bench {

class SyncProbe : public c10::WarningHandler {
 public:
  SyncProbe() : previous_(c10::WarningUtils::get_warning_handler()) {
    c10::WarningUtils::set_warning_handler(this);
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
    last_ = std::chrono::steady_clock::now();
  }
  ~SyncProbe() override {
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
    c10::WarningUtils::set_warning_handler(previous_);
  }
  SyncProbe(const SyncProbe&) = delete;
  SyncProbe& operator=(const SyncProbe&) = delete;

  // The phase that starts now (the previous one ends).
  void phase(const std::string& name) {
    close_phase();
    phase_ = name;
  }

  void process(const c10::Warning& w) override {
    if (w.msg().find("synchronizing") == std::string::npos) return previous_->process(w);
    ++sites_[phase_ + " <- " + salt_frames(c10::get_backtrace(1, 48, true))];
  }

  // One line per phase (host ms, syncs), then each distinct call site.
  void report() {
    close_phase();
    std::printf("  sync probe (one step from an idle card; the host's time per phase, the syncs this thread made "
                "in it; the autograd engine's threads print theirs as torch warnings):\n");
    for (const auto& [name, ms] : times_) {
      int n = 0;
      for (const auto& [site, count] : sites_)
        if (site.rfind(name + " <- ", 0) == 0) n += count;
      std::printf("    %-10s %8.2f ms host, %d sync(s)\n", name.c_str(), ms, n);
    }
    for (const auto& [site, count] : sites_) std::printf("    %dx %s\n", count, site.c_str());
  }

 private:
  void close_phase() {
    const auto now = std::chrono::steady_clock::now();
    if (!phase_.empty()) times_.emplace_back(phase_, std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

  // The torch call that synced, then the frames that name salt (or, where none
  // does, the first few): where in salt-cpp's code the sync was asked for.
  static std::string salt_frames(const std::string& backtrace) {
    std::istringstream lines(backtrace);
    std::vector<std::string> ours, first;
    for (std::string line; std::getline(lines, line);) {
      const auto at = line.find(": ");
      std::string frame = at == std::string::npos ? line : line.substr(at + 2);
      if (frame.size() > 140) frame = frame.substr(0, 140);
      if (frame.find("c10::") == 0 || frame.find("warn_or_error_on_sync") != std::string::npos) continue;
      if (first.size() < 4) first.push_back(frame);
      if (frame.find("salt::") != std::string::npos && ours.size() < 6) ours.push_back(frame);
    }
    if (ours.empty()) ours = first;
    else if (!first.empty()) ours.insert(ours.begin(), first.front());  // the torch call itself
    std::string out;
    for (const auto& f : ours) out += (out.empty() ? "" : " <- ") + f;
    return out;
  }

  c10::WarningHandler* previous_;
  std::string phase_;
  std::chrono::steady_clock::time_point last_;
  std::vector<std::pair<std::string, double>> times_;
  std::map<std::string, int> sites_;
};

}  // namespace salt::bench
#endif
