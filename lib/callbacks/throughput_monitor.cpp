// lightning.pytorch.callbacks.ThroughputMonitor: at every logging step, the
// training's throughput under Lightning's names, to every logger (metrics.csv,
// TensorBoard): train/time, train/batches, train/samples (jets), train/lengths
// (valid constituents, e.g. tracks), and once `window_size` batches are in,
// train/device/batches_per_sec, samples_per_sec, items_per_sec, flops_per_sec and
// train/device/mfu where the card's peak is known (Lightning's table), plus the
// totals over processes (no device/) with several. The time leaves out
// validation, as Lightning's does. FLOPs per batch: the first batch's forward and
// backward, counted by training/outputs/flop_counter.h, where Lightning takes a
// `flops_per_batch` the module provides (salt's provides none).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>

#include <torch/cuda.h>

#include "core/errors.h"
#include "training/callback_registry.h"
#include "training/outputs/flop_counter.h"
#include "training/outputs/peak_flops.h"
#include "training/step/cuda_runtime.h"

namespace salt::callbacks {
namespace {

struct ThroughputOptions {
  YAML::Node batch_size_fn, length_fn;  // Python callables: salt-cpp counts jets and valid constituents
  int64_t window_size = 100;
  std::string separator = "/";
};

const config::Binding<ThroughputOptions>& throughput_binding() {
  using namespace config;
  static const auto b =
      Binding<ThroughputOptions>({})
          .arg("batch_size_fn", SALT_FIELD(batch_size_fn), "Lightning's samples of a batch: here always its jets.",
               t_any())
          .arg("length_fn", SALT_FIELD(length_fn),
               "Lightning's items of a batch: here always its valid constituents (tracks, ...).", t_any())
          .arg("window_size", SALT_FIELD(window_size), "Batches the rates are averaged over.", at_least(t_int(), 2))
          .arg("separator", SALT_FIELD(separator), "Between the parts of a metric's name.");
  return b;
}

double monitor_seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Lightning's Throughput: the last `window` updates of the running totals.
struct ThroughputTotals {
  double time;
  int64_t batches, samples, lengths;
};

class ThroughputMonitor : public Callback {
 public:
  explicit ThroughputMonitor(ThroughputOptions o) : o_(std::move(o)) {}

  void on_fit_start(FitState& s) override {
    s.batch.count_items = true;
    const auto& t = s.setup->run.trainer;
    peak_ = s.process.cuda_device >= 0 ? training::peak_flops(cuda::device_name(s.process.cuda_device),
                                                      cuda::compute_capability_major(s.process.cuda_device), t.precision,
                                                      cuda::float32_matmul_precision())
                               : std::nullopt;
    t0_ = monitor_seconds();
  }

  void on_epoch_start(FitState& s, const std::string& stage, int64_t) override {
    if (stage == "train" && !flops_per_batch_ && !counter_ && s.process.main_rank) {
      counter_ = std::make_unique<training::FlopCounter>();
      counted_from_ = totals_.batches;
    }
    if (stage == "val" && totals_.batches > 0) paused_at_ = last_update_;
  }

  // The first optimizer step's batches are done forward and backward: their FLOPs.
  void on_after_backward(FitState&) override {
    if (!counter_) return;
    const int64_t batches = std::max<int64_t>(1, totals_.batches - counted_from_ + 1);
    flops_per_batch_ = counter_->flops() / static_cast<double>(batches);
    if (counter_->uncounted() > 0)
      spdlog::warn("ThroughputMonitor: FLOPs leave out salt-cpp's attention kernel on the card ({} calls)",
                   counter_->uncounted());
    counter_.reset();
  }

  void on_batch_end(FitState& s, const std::string& stage, int64_t, const torch::Tensor&, int64_t) override {
    if (stage != "train" || !s.process.main_rank) return;
    if (!std::exchange(updated_, false)) update(s);
  }

  void on_validation_end(FitState&) override {  // the training clock skips the validation
    if (paused_at_) t0_ += monitor_seconds() - *paused_at_;
    paused_at_.reset();
  }

  void add_step_metrics(FitState& s, Metrics& m) override {
    if (!s.process.main_rank) return;
    if (s.process.cuda_device >= 0) torch::cuda::synchronize(s.process.cuda_device);  // what the card has done, not queued
    update(s);
    updated_ = true;
    compute(s.process.world_size, m);
  }

 private:
  void update(const FitState& s) {
    totals_.batches += 1;
    totals_.samples += s.batch.jets;
    totals_.lengths += s.batch.items;
    totals_.time = monitor_seconds() - t0_;
    last_update_ = monitor_seconds();
    window_.push_back(totals_);
    if (static_cast<int64_t>(window_.size()) > o_.window_size) window_.pop_front();
  }

  void compute(int world, Metrics& m) const {
    const auto& sep = o_.separator;
    auto put = [&](const std::string& name, double v) { m["train" + sep + name] = v; };
    const auto dev = "device" + sep;
    put("time", totals_.time);
    put("batches", static_cast<double>(totals_.batches));
    put("samples", static_cast<double>(totals_.samples));
    put("lengths", static_cast<double>(totals_.lengths));
    if (static_cast<int64_t>(window_.size()) < o_.window_size) return;
    const auto& first = window_.front();
    const double elapsed = totals_.time - first.time;
    if (elapsed <= 0) return;
    const double batches = static_cast<double>(totals_.batches - first.batches) / elapsed;
    const double samples = static_cast<double>(totals_.samples - first.samples) / elapsed;
    const double items = static_cast<double>(totals_.lengths - first.lengths) / elapsed;
    put(dev + "batches_per_sec", batches);
    put(dev + "samples_per_sec", samples);
    put(dev + "items_per_sec", items);
    if (world > 1) {
      put("batches_per_sec", batches * world);
      put("samples_per_sec", samples * world);
      put("items_per_sec", items * world);
    }
    if (!flops_per_batch_) return;
    // Lightning: the window's FLOPs but its first batch's, over the window's time.
    const double flops = *flops_per_batch_ * static_cast<double>(window_.size() - 1) / elapsed;
    put(dev + "flops_per_sec", flops);
    if (world > 1) put("flops_per_sec", flops * world);
    if (peak_) put(dev + "mfu", flops / *peak_);
  }

  ThroughputOptions o_;
  ThroughputTotals totals_{0, 0, 0, 0};
  std::deque<ThroughputTotals> window_;
  double t0_ = 0, last_update_ = 0;
  std::optional<double> paused_at_;
  bool updated_ = false;  // this batch was counted at its logging step
  std::unique_ptr<training::FlopCounter> counter_;
  int64_t counted_from_ = 0;
  std::optional<double> flops_per_batch_;
  std::optional<double> peak_;
};

const bool kThroughputMonitorRegistered = register_callback(
    {{"lightning.pytorch.callbacks.ThroughputMonitor", "callback", throughput_binding().type(),
      "Logs batches, jets, tracks and FLOPs per second and MFU at every logging step.", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.ThroughputMonitor",
       "lightning.pytorch.callbacks.throughput_monitor.ThroughputMonitor"}},
     [](const YAML::Node& args) { return std::make_unique<ThroughputMonitor>(throughput_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
