// `salt fit`'s set-up, in named stages (process group, data, run directory and
// resume, the tuners, schedule, git checks, run files, loaders, the training step),
// and the state the run goes on with: FitRun (fit.cpp) trains from it. Internal to
// fit.cpp; callbacks see the run through `state_`.
#pragma once
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/compose.h"
#include "config/config_edit.h"
#include "data/file_pin.h"
#include "data/loader.h"
#include "data/temp_copy.h"
#include "parallel/grad_sync.h"
#include "parallel/session.h"
#include "training/callback.h"
#include "training/loop/batch_order.h"
#include "training/checkpoints/checkpoint.h"
#include "training/loop/epoch_resources.h"
#include "training/loop/fit.h"
#include "training/fit_plan.h"
#include "training/loop/fit_support.h"
#include "training/step/forward_batch.h"
#include "training/optim/optimization.h"
#include "training/outputs/profiler.h"
#include "training/loop/run_dir.h"
#include "training/loop/run_inputs.h"
#include "training/loop/run_loaders.h"
#include "training/loop/run_processes.h"
#include "training/loop/fit_schedule.h"
#include "training/loop/run_start.h"
#include "training/run_setup.h"
#include "training/step/step_options.h"
#include "training/step/train_step.h"

namespace salt::training {

// A callback's class without its namespaces (ProgressBar), for the profiler.
std::string callback_class_name(const callbacks::Callback& c);

class FitStart {
 protected:
  FitStart(const config::ResolvedConfig& resolved, const FitHooks& hooks, const std::optional<StepOptions>& options);
  ~FitStart();

  // Every stage up to the first training batch, in order.
  void set_up();

  // Calls a callback hook on every callback; under trainer.profiler each one's
  // time is recorded as [Callback]<class>.<hook>.
  template <class Hook, class... Args>
  void hook(const char* name, Hook h, Args&&... args) {
    if (!profiler_) return callbacks_.call(h, args...);
    for (const auto& c : callbacks_.all()) {
      SimpleProfiler::Scope scope(profiler_.get(), "[Callback]" + callback_class_name(*c) + "." + name);
      ((*c).*h)(args...);
    }
  }

  SimpleProfiler::Scope profile(const char* action) { return SimpleProfiler::Scope(profiler_.get(), action); }

  // Input files are pinned for the run (data/file_pin.h): a change stops it in one line.
  void check_inputs() const;
  data::LoaderOptions loader_options() const;

 private:
  // The stages (fit_start.cpp says what each does).
  void restore_callbacks();
  void join_data_parallel();
  void decide_start();
  std::string decide_on_rank0();
  void load_resume();
  void init_weights();
  void place_model();
  std::vector<std::pair<std::string, std::string>> rank_settings() const;
  void plan_steps();
  void make_optimization();
  void run_git_checks();
  void copy_to_temp();
  void write_files();
  data::SamplerOptions val_sampler(int64_t batch_size) const;
  void make_loaders();
  void make_batch_order();
  TrainStepOptions step_options() const;
  void make_step();
  void choose_precision();
  void tune();
  void apply_tuned(const config::ConfigEdit& edit);
  void prepare_state();
  void resume_position();

 protected:
  RunSetup setup_;
  const FitHooks& hooks_;
  StepOptions options_;  // the switches, read once (training/step/step_options.h)
  const TrainerConfig& trainer_;
  const data::DataConfig& data_;  // setup_.run.data, which a tuner's edit changes in place (apply_tuned)
  bool dev_run_ = false;
  RunProcesses processes_;  // the device, and the session, rank and world of several processes
  std::optional<QuietLogs> quiet_;
  // data
  RunInputs inputs_;  // the readers, members, temp copies and pins of the input files
  RunLoaders loaders_;  // the training sampler, both loaders and salt's batch order
  RunRecord record_;  // config.yaml as written, git's metadata, what fine-tuning took
  // run directory and resume
  RunStart start_;  // the run directory and the checkpoint resumed from
  // schedule and loop position
  FitSchedule schedule_;  // the optimizer and schedule, the plan, where a resumed epoch picks up
  StepContext step_context_;  // the step's device, autocast, transfer, kernels (choose_precision)
  ResourceMeter meter_;
  std::unique_ptr<TrainStep> step_;  // the training step: loss scaler, graphs, host-read meter, non-finite watch
  std::unique_ptr<SimpleProfiler> profiler_;  // trainer.profiler
  // callbacks
  callbacks::CallbackList callbacks_;
  callbacks::FitState state_;
  FitResult result_;
};

}  // namespace salt::training
