// lightning.pytorch.callbacks.DeviceStatsMonitor: the device's figures with the
// train metrics at each logging step (every log_every_n_steps), under Lightning's
// names: DeviceStatsMonitor.on_train_batch_end/<stat>. On a GPU, torch's CUDA
// allocator statistics under torch.cuda.memory_stats' names (allocated, reserved,
// active bytes: current and peak; allocation retries, out-of-memory events); on
// the CPU (or with cpu_stats: true) psutil's three: cpu_percent (all cores, since
// the last reading), cpu_vm_percent and cpu_swap_percent, read from /proc.
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "training/callback_registry.h"
#include "training/step/cuda_runtime.h"

namespace salt::callbacks {
namespace {

struct DeviceStatsOptions {
  std::optional<bool> cpu_stats;
};

const config::Binding<DeviceStatsOptions>& device_stats_monitor_binding() {
  static const auto b = config::Binding<DeviceStatsOptions>({}).arg(
      "cpu_stats", SALT_FIELD(cpu_stats), "CPU figures too (null: on a CPU run only; false: never on a CPU run).");
  return b;
}

// /proc/meminfo's value of `key` in kB (0 if absent).
double meminfo(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1));
  return 0;
}

// psutil's percent: the share of total not available (memory) or used (swap).
double percent_used(double total, double free) { return total > 0 ? 100.0 * (total - free) / total : 0.0; }

class DeviceStatsMonitor : public Callback {
 public:
  explicit DeviceStatsMonitor(DeviceStatsOptions o) : o_(o) {}

  void on_fit_start(FitState& s) override {
    cuda_device_ = s.process.cuda_device;
    cpu_ = cuda_device_ < 0 ? o_.cpu_stats.value_or(true) : o_.cpu_stats.value_or(false);
    if (cpu_) cpu_percent();  // psutil's first reading starts the interval
  }

  void add_step_metrics(FitState&, Metrics& m) override {
    const std::string prefix = "DeviceStatsMonitor.on_train_batch_end/";
    if (cuda_device_ >= 0)
      for (const auto& [name, value] : cuda::memory_stats(cuda_device_)) m[prefix + name] = value;
    if (!cpu_) return;
    m[prefix + "cpu_vm_percent"] = percent_used(meminfo("MemTotal"), meminfo("MemAvailable"));
    m[prefix + "cpu_percent"] = cpu_percent();
    m[prefix + "cpu_swap_percent"] = percent_used(meminfo("SwapTotal"), meminfo("SwapFree"));
  }

 private:
  // psutil.cpu_percent(): busy share of all cores since the previous call (0 on the first).
  double cpu_percent() {
    std::ifstream in("/proc/stat");
    std::string cpu;
    in >> cpu;
    double total = 0, idle = 0, v = 0;
    for (int i = 0; i < 10 && in >> v; ++i) {
      total += i < 8 ? v : 0;  // guest time is already in user/nice
      if (i == 3 || i == 4) idle += v;  // idle, iowait
    }
    const double dt = total - last_total_, di = idle - last_idle_;
    const bool first = last_total_ == 0;
    last_total_ = total;
    last_idle_ = idle;
    return first || dt <= 0 ? 0.0 : 100.0 * (dt - di) / dt;
  }

  DeviceStatsOptions o_;
  int cuda_device_ = -1;
  bool cpu_ = false;
  double last_total_ = 0, last_idle_ = 0;
};

const bool kDeviceStatsMonitorRegistered = register_callback(
    {{"lightning.pytorch.callbacks.DeviceStatsMonitor", "callback", device_stats_monitor_binding().type(),
      "Logs device figures (GPU memory, CPU load) with the train metrics.", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.DeviceStatsMonitor"}},
     [](const YAML::Node& args) { return std::make_unique<DeviceStatsMonitor>(device_stats_monitor_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
