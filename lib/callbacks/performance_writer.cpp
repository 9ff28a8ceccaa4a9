// salt.callbacks.PerformanceWriter (for Katib hyperparameter searches): after each
// validation, one JSON line {"epoch": E, "<metric>": "<value, 5 decimals>", ...,
// "timestamp": "<ISO time>"} appended to <dir_path>/performance_metric.json
// (dir_path defaults to the run directory), and with std_out the same figures
// printed as salt prints them. Metrics: train_loss, val_loss,
// val_jet_classification_loss and add_metrics, each the latest logged value; salt
// names its metrics train/loss, val/loss, ..., so a requested name that is not
// logged as such is also looked up with its first '_' read as '/' (val_loss ->
// val/loss), and written under the requested name. Rank 0; not under fast_dev_run.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <sys/time.h>

#include "training/callback_registry.h"
#include "core/atomic_file.h"
#include "core/errors.h"

namespace salt::callbacks {
namespace {
namespace fs = std::filesystem;

struct PerformanceWriterOptions {
  std::optional<std::string> dir_path;
  std::vector<std::string> add_metrics;
  bool std_out = false;
};

const config::Binding<PerformanceWriterOptions>& performance_writer_binding() {
  using namespace config;
  static const auto b =
      Binding<PerformanceWriterOptions>({})
          .arg("dir_path", SALT_FIELD(dir_path), "Directory of performance_metric.json (default: the run directory).",
               t_optional(t_path()))
          .arg("add_metrics", SALT_FIELD(add_metrics), "Metrics written besides train_loss, val_loss and "
               "val_jet_classification_loss.", t_list(t_str()))
          .arg("std_out", SALT_FIELD(std_out), "Also print the figures (for Katib's metrics collector).");
  return b;
}

// Python's datetime.now().isoformat(): 2026-11-24T06:46:27.123456
std::string iso_now() {
  timeval tv{};
  gettimeofday(&tv, nullptr);
  std::tm local{};
  localtime_r(&tv.tv_sec, &local);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &local);
  char out[80];
  std::snprintf(out, sizeof out, "%s.%06ld", buf, static_cast<long>(tv.tv_usec));
  return out;
}

class PerformanceWriter : public Callback {
 public:
  explicit PerformanceWriter(PerformanceWriterOptions o) : o_(std::move(o)) {
    metrics_ = {"train_loss", "val_loss", "val_jet_classification_loss"};
    metrics_.insert(metrics_.end(), o_.add_metrics.begin(), o_.add_metrics.end());
  }

  void on_fit_start(FitState& s) override {
    if (s.dev_run || !s.process.main_rank) return;
    const fs::path dir = o_.dir_path ? fs::path(*o_.dir_path) : s.run_dir;
    create_directories_or_fail(dir, "PerformanceWriter dir_path");
    path_ = dir / "performance_metric.json";
    if (!s.same_dir_resume || !fs::exists(path_)) write_file_atomic(path_, "");  // salt starts it empty
  }

  void on_metrics(FitState&, const Metrics& m) override {
    for (const auto& [k, v] : m) latest_[k] = v;
  }

  void on_validation_end(FitState& s) override {
    if (path_.empty()) return;
    std::string json = "{\"epoch\": " + std::to_string(s.epoch);
    std::string printed = "epoch " + std::to_string(s.epoch) + ":\n";
    for (const auto& name : metrics_) {
      const auto value = lookup(name);
      if (!value) continue;
      char v[64];
      std::snprintf(v, sizeof v, "%.5f", *value);
      json += ", \"" + name + "\": \"" + v + "\"";
      printed += name + "=" + v + "\n";
    }
    const auto now = iso_now();
    json += ", \"timestamp\": \"" + now + "\"}\n";
    // One write of a whole line: a killed run leaves whole lines only.
    std::ofstream out(path_, std::ios::app);
    out << json << std::flush;
    if (!out) throw InputError("cannot write " + path_.string());
    if (o_.std_out) std::cout << printed << "timestamp=" << now << "\n" << std::endl;
  }

 private:
  std::optional<double> lookup(const std::string& name) const {
    if (auto it = latest_.find(name); it != latest_.end()) return it->second;
    if (auto at = name.find('_'); at != std::string::npos) {
      auto slashed = name;
      slashed[at] = '/';
      if (auto it = latest_.find(slashed); it != latest_.end()) return it->second;
    }
    return std::nullopt;
  }

  PerformanceWriterOptions o_;
  std::vector<std::string> metrics_;
  Metrics latest_;
  fs::path path_;
};

const bool kPerformanceWriterRegistered = register_callback(
    {{"salt.callbacks.PerformanceWriter", "callback", performance_writer_binding().type(),
      "Appends the validation figures to performance_metric.json (one JSON line per validation) for Katib.",
      config::Support::kFull, "", {"salt.callbacks.performancewriter.PerformanceWriter"}},
     [](const YAML::Node& args) { return std::make_unique<PerformanceWriter>(performance_writer_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
