// One `salt fit`: its parts, made by the set-up's stages (fit_start.h) in
// set_up(), then per epoch training and validation + checkpoint, then finish.
// Callbacks see the run through `state_`. Internal to training/loop: fit() (fit.h)
// is how the rest of salt-cpp runs one.
#pragma once
#include <torch/torch.h>

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "config/compose.h"
#include "training/callback.h"
#include "training/loop/epoch_resources.h"
#include "training/loop/fit.h"
#include "training/loop/fit_callbacks.h"
#include "training/loop/fit_schedule.h"
#include "training/loop/fit_support.h"
#include "training/loop/run_inputs.h"
#include "training/loop/run_loaders.h"
#include "training/loop/run_processes.h"
#include "training/loop/run_start.h"
#include "training/run_setup.h"
#include "training/step/forward_batch.h"
#include "training/step/validation.h"
#include "training/step/step_options.h"
#include "training/step/train_step.h"

namespace salt::training {

// Where the loop is within an epoch, beyond FitState's counters.
struct LoopPosition {
  bool stop = false;
  // The epoch's batches through its last optimizer step (-1 once the epoch and its
  // validation are done): where a checkpoint on exception resumes.
  int64_t stepped_in_epoch = -1;
  torch::Tensor generator_before_validation;  // defined while an epoch-end validation runs
  bool validated_last_batch = false;          // a mid-epoch validation saw the last trained batch
};

class FitRun {
 public:
  explicit FitRun(const config::ResolvedConfig& resolved);
  ~FitRun();
  FitRun(const FitRun&) = delete;
  FitRun& operator=(const FitRun&) = delete;

  // `options`: the switches as the command read them (else read here).
  FitResult run(const FitHooks& hooks, const std::optional<StepOptions>& options);

 private:
  // ---- set-up (fit_run.cpp) ----
  void set_up(const FitHooks& hooks, const StepOptions& options);
  void start_callbacks();
  void run_tuners(const TrainStepOptions& step_options);
  void connect_state();
  void restore_callbacks();
  void resume_position();
  void check_inputs() const;  // input files pinned for the run: a change stops it in one line

  // ---- the loop (fit.cpp) ----
  void train_epochs();
  bool stop_requested(int64_t epochs_done) const;
  void save_on_exception(const std::exception_ptr& error);
  bool weights_finite() const;
  std::vector<int64_t> epoch_order(int64_t full_batches, const std::string& key);
  void train_epoch(int64_t epoch);
  void record_resources(const EpochResources& figures);
  void train_batch(Batch batch, int64_t b);
  void check_finite();
  void optimizer_step(int64_t b);
  void log_interval();
  void mean_over_ranks(std::map<std::string, double>& metrics);
  bool validation_due(int64_t epoch) const;
  void validate_mid_epoch(int64_t epoch);
  bool validate(int64_t epoch, bool mid_epoch = false);
  void sum_over_ranks(LossTotals& val);
  FitResult finish();
  void report_speed() const;

  const TrainerConfig& trainer() const { return setup_.run.trainer; }
  bool dev_run() const { return trainer().fast_dev_run > 0; }
  template <class Hook, class... Args>
  void hook(const char* name, Hook h, Args&&... args) {
    callbacks_.hook(name, h, std::forward<Args>(args)...);
  }

  // The parts, in the order the set-up makes them (and so destroyed in reverse:
  // the loaders before the inputs they read, the callbacks before the run directory's clean-up).
  RunSetup setup_;
  RunProcesses processes_;
  std::optional<QuietLogs> quiet_;  // ranks other than 0 log warnings only
  RunInputs inputs_;
  RunLoaders loaders_;
  RunRecord record_;
  RunStart start_;
  FitSchedule schedule_;
  ResourceMeter meter_;
  std::unique_ptr<TrainStep> step_;
  FitCallbacks callbacks_;
  callbacks::FitState state_;
  FitResult result_;
  // ---- the loop's own ----
  LoopPosition position_;
  LossTotals logged_batch_;
  std::vector<std::string> attention_kernels_;
};

}  // namespace salt::training
