// The metrics logger every run has: the logged train steps' losses and validation losses
// into <run>/metrics.csv (rank 0, not under fast_dev_run), rewritten after each
// validation so a killed run keeps what it logged.
#include "training/callback_registry.h"
#include "training/outputs/metrics_log.h"

namespace salt::callbacks {
namespace {

class MetricsWriter : public Callback {
 public:
  void on_fit_start(FitState& s) override {
    log_ = training::MetricsLog(s.dev_run || !s.process.main_rank ? std::filesystem::path() : s.run_dir / "metrics.csv");
    if (s.same_dir_resume && s.process.main_rank) log_.load_existing();
  }
  void on_metrics(FitState& s, const Metrics& m) override { log_.log(s.epoch, s.logged_step(), m); }
  void on_validation_end(FitState&) override { log_.flush(); }
  void on_fit_end(FitState&) override { log_.flush(); }

 private:
  training::MetricsLog log_{std::filesystem::path()};
};

}  // namespace

std::unique_ptr<Callback> make_metrics_writer() { return std::make_unique<MetricsWriter>(); }

}  // namespace salt::callbacks
