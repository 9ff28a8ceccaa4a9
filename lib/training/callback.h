// Callbacks: what happens around the fit and test loops (checkpoints, progress,
// metrics, the model summary, the prediction file), as Lightning's callbacks.
// fit() and evaluate() call the hooks below in order; they never name a callback.
// Each callback registers itself next to its code with its salt/Lightning class
// path and its init_args binding (see callback_registry.h), so adding one is one file.
#pragma once
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "config/config_edit.h"
#include "training/outputs/prediction_writer.h"
#include "models/salt_wrapper.h"
#include "serialize/py_value.h"
#include "training/checkpoints/checkpoint.h"
#include "training/fit_plan.h"
#include "training/optim/optimization.h"
#include "training/outputs/progress.h"
#include "training/run_setup.h"

namespace salt::callbacks {

using Metrics = std::map<std::string, double>;

// A tuner's trial (BatchSizeFinder, LearningRateFinder; FitActions::run_trial):
// optimizer steps from the model's current weights with a throwaway optimizer,
// outside the run (no callback, logger or checkpoint sees them), on the training
// loader as the tuners last made it (the configured batch size until
// FitActions::reload_loaders), in salt's batch order from torch's generator, as
// Lightning's trials draw it; afterwards the weights are put back.
struct TrialSpec {
  int64_t steps = 0;       // optimizer steps (each of trainer.accumulate_grad_batches batches)
  int64_t val_batches = 0; // validation batches after the steps (memory is checked there too)
  // Lightning's isolate_rng around the trial (LearningRateFinder): the generators are
  // put back afterwards, after the reload below. Without it (BatchSizeFinder) the
  // trial's draws stay drawn, as in Lightning.
  bool isolate_rng = false;
  // The loaders made again at the same size after the trial (LearningRateFinder's end).
  bool reload_after = false;
  // Step i's learning rate (muP factors applied on top); empty: the one-cycle
  // schedule's first steps.
  std::function<double(int64_t step)> lr_at;
  // After step i with its loss (rank 0's on several processes, which Lightning
  // broadcasts): false ends the trial.
  std::function<bool(int64_t step, double loss)> after_step;
};

struct TrialResult {
  int64_t steps_run = 0;
  int64_t batch_size = 0;         // per process: the loader's
  int64_t batches_per_epoch = 0;  // at that batch size (0: not one full batch; nothing ran)
  bool out_of_memory = false;     // the device (or host) allocator gave up
};

// What the fit hooks see. fit() owns it and keeps it current; callbacks read it
// and may refuse the run from on_fit_start (throw UsageError).
// Where this process is in the run.
struct RankPlace {
  bool main_rank = true;  // only rank 0 writes files and prints
  int rank = 0;           // this process's rank in a data-parallel run
  int world_size = 1;     // processes training together
  int cuda_device = -1;   // the CUDA device this rank trains on; -1 on the CPU
};

// What the last optimizer step used.
struct LastStep {
  double lr = 0, beta1 = 0, weight_decay = 0;
  std::string optimizer_name = "AdamW";  // Lightning logs lr-<class name>
};

// The metrics last logged (Lightning's callback_metrics hold both).
struct LoggedMetrics {
  Metrics val;    // the last validation's
  Metrics train;  // the last logged train interval's
};

// The training batch in hand: its jets, and (once a callback sets count_items,
// e.g. ThroughputMonitor) its valid constituents.
struct BatchInHand {
  int64_t jets = 0, items = 0;
  bool count_items = false;
};

// What the run lends its callbacks to do, beside the values FitState holds; each
// may be empty where the run does not offer it (a test's own FitState, a tuner's
// trial, the hooks outside which run_trial and edit_config exist).
struct FitActions {
  // The full training state now (weights, optimizer, scheduler, RNG), for checkpoints.
  std::function<training::CheckpointState()> capture;
  // Tells every callback that a checkpoint was written (on_checkpoint_saved).
  std::function<void(const std::filesystem::path&)> checkpoint_saved;
  // Hands a histogram of values to every callback (on_histogram: the loggers that
  // can store one), e.g. a layer's weights from WeightLoggerCallback.
  std::function<void(const std::string& tag, const std::vector<double>& values)> log_histogram;
  std::function<void(const std::string& tag, const std::string& png)> log_image;
  std::function<void(const std::string& tag, const std::string& markdown)> log_text;
  // Element-wise sums over the ranks of a multi-process run (identity on one):
  // every rank must call it at the same point.
  std::function<std::vector<double>(const std::vector<double>&)> sum_over_ranks;
  // Runs a tuner's trial (see TrialSpec); only during the tune hook.
  std::function<TrialResult(const TrialSpec&)> run_trial;
  // A tuner's reset of the loaders (Lightning's _reset_dataloaders): made again at
  // this batch size per process, which the next trials use; only during the tune hook.
  std::function<void(int64_t batch_size)> reload_loaders;
  // A tuner's result (data.batch_size, a model.lrs_config rate): the run's typed
  // settings and what config.yaml records change together (config::apply_edit);
  // only during the tune hook. Tuners change settings through this alone.
  std::function<void(const config::ConfigEdit&)> edit_config;
};

struct FitState {
  training::RunSetup* setup = nullptr;
  training::Optimization* optimization = nullptr;  // StochasticWeightAveraging swaps its schedule
  std::filesystem::path run_dir;  // empty under fast_dev_run
  RankPlace process;              // this process's rank and device among the run's
  int64_t train_rows = 0;         // training jets each epoch draws from (after num_train)
  bool dev_run = false;           // fast_dev_run: nothing written
  bool same_dir_resume = false;   // resumed from a requeue checkpoint in run_dir
  int64_t epoch = 0, global_step = 0;
  // The step Lightning labels what is logged now with (its loop's
  // `_batches_that_stepped`): the optimizer steps taken before the current batch's,
  // so the 50th step's losses (and its gradients, in on_after_backward) are logged at
  // 49, a validation after 120 steps at 119. metrics.csv and TensorBoard use it.
  // stepping: fit() is inside an optimizer step, whose global_step is not yet counted.
  bool stepping = false;
  int64_t logged_step() const { return stepping || global_step == 0 ? global_step : global_step - 1; }
  // The run's plan (training/fit_plan.h), which fit() owns: null until it is worked
  // out, i.e. in on_setup and tune; the accessors below then give 0.
  const training::TrainPlan* plan = nullptr;
  const training::ValPlan* val_plan = nullptr;
  LastStep last_step;      // what the last optimizer step used
  LoggedMetrics metrics;   // the last validation's and the last logged train interval's
  // Training batches done in this epoch while a mid-epoch hook runs (a step
  // checkpoint, a validation within the epoch); -1 once the epoch's batches are
  // done. Checkpoints record it, so a resume continues after those batches.
  int64_t batch_in_epoch = -1;
  // Lightning's trainer.should_stop: a callback asks the run to end; it ends at
  // the next batch or epoch boundary once min_epochs/min_steps are met.
  bool should_stop = false;
  BatchInHand batch;  // the training batch from before its step to its on_batch_end
  // Batches per optimizer step in this epoch (trainer.accumulate_grad_batches;
  // GradientAccumulationScheduler sets it at each train epoch's start).
  int64_t accumulate_grad_batches = 1;
  std::filesystem::path resumed_from;  // --ckpt_path (or the requeue checkpoint), empty if none
  FitActions actions;  // what a callback may ask of the run

  int64_t max_epochs() const { return plan ? plan->max_epochs : 0; }          // -1: until max_steps
  int64_t train_batches() const { return plan ? plan->train_batches : 0; }    // per epoch
  int64_t val_batches() const { return val_plan ? val_plan->val_batches : 0; }  // per validation (0: off)
  // The whole run's shape, for the progress bar's ETA.
  training::RunSchedule schedule() const {
    const auto& t = setup->run.trainer;
    return {max_epochs(), t.max_steps, t.accumulate_grad_batches, train_batches(), val_batches(),
            t.check_val_every_n_epoch};
  }
};

// What a monitor (EarlyStopping, ModelCheckpoint) can name: the last train and
// validation metrics, as Lightning's trainer.callback_metrics.
inline Metrics monitor_candidates(const FitState& s) {
  Metrics m = s.metrics.train;
  for (const auto& [k, v] : s.metrics.val) m[k] = v;
  return m;
}

// What the test hooks see (salt test / predict).
struct TestState {
  training::RunSetup* setup = nullptr;
  std::filesystem::path checkpoint;  // the weights under test
  std::filesystem::path test_file;
  int64_t num_rows = 0;              // rows to predict (num_test)
  std::filesystem::path output;      // salt's prediction file name for this checkpoint and test file
  bool wants_predictions = false;    // a callback needs the prediction columns of each batch
  bool written = false;              // a callback wrote `output`
};

class Callback {
 public:
  virtual ~Callback() = default;

  // --- fit ---
  // Before anything is written (no run directory yet): a callback may refuse the
  // run here by throwing UsageError.
  virtual void on_setup(FitState&) {}
  // The data are open and the model is placed; the batches per epoch and the
  // one-cycle schedule are not planned yet. Tuners (BatchSizeFinder,
  // LearningRateFinder) run trials here (FitActions::run_trial) and may change
  // data.batch_size or model.lrs_config (FitActions::edit_config), which the run then plans with.
  virtual void tune(FitState&) {}
  // The run directory and any resume are decided, run files written, nothing
  // trained yet.
  virtual void on_fit_start(FitState&) {}
  // stage: "train" or "val"; batches: how many this epoch runs.
  virtual void on_epoch_start(FitState&, const std::string& stage, int64_t batches) {}
  // `loss`: the batch's loss, a 0-dim tensor on the model's device. Reading it
  // (salt::host_read) makes the CPU wait for the GPU: read it only when shown.
  virtual void on_batch_end(FitState&, const std::string& stage, int64_t batch, const torch::Tensor& loss,
                            int64_t jets) {}
  // At each optimizer step, after the backward pass (and, on several ranks, the
  // gradient sync), before clipping and the step: the gradients are complete.
  // global_step is the step about to be taken.
  virtual void on_after_backward(FitState&) {}
  // A histogram to store at the current global_step (FitActions::log_histogram).
  virtual void on_histogram(FitState&, const std::string& tag, const std::vector<double>& values) {}
  // A PNG picture to store at the current global_step (FitActions::log_image).
  virtual void on_image(FitState&, const std::string& tag, const std::string& png) {}
  // Text (markdown) to store at the current global_step (FitActions::log_text).
  virtual void on_text(FitState&, const std::string& tag, const std::string& markdown) {}
  // Each validation batch's model output and the batch (on the device), before on_batch_end.
  virtual void on_validation_batch(FitState&, const models::ModelOutput&, const Batch&) {}
  // After a validation's losses are averaged: add val/... metrics of its own (every
  // rank calls it; sums over ranks through FitActions::sum_over_ranks).
  virtual void add_val_metrics(FitState&, Metrics&) {}
  virtual void on_epoch_end(FitState&, const std::string& stage, const std::string& summary) {}
  // Every log_every_n_steps optimizer steps: the train metrics about to be logged.
  // Callbacks may add their own (the learning rate) before on_metrics sees them.
  virtual void add_step_metrics(FitState&, Metrics&) {}
  // Metrics to record: the logged train step's losses, then each validation's.
  virtual void on_metrics(FitState&, const Metrics&) {}
  virtual void on_validation_end(FitState&) {}
  virtual void on_checkpoint_saved(FitState&, const std::filesystem::path&) {}
  virtual void on_fit_end(FitState&) {}
  // Training ended with an error (thrown, a non-finite loss, another rank's failure,
  // SIGINT/SIGTERM), before the error is reported: Lightning's on_exception. The
  // state (FitActions::capture) is the last optimizer step's; `error` is its message.
  virtual void on_exception(FitState&, const std::string& error) {}

  // After the epoch's training and its validation, if it had one (Lightning's
  // on_train_epoch_end, which runs after the epoch-end validation).
  virtual void on_train_epoch_end(FitState&) {}

  // --- state kept in checkpoints (Lightning's Callback.state_dict) ---
  // A non-empty key: state_dict() is saved under it in the checkpoint's
  // `callbacks` entry, and load_state_dict() gets it back when a run resumes
  // from a checkpoint holding that key (Lightning's state_key: the class name
  // and the options that tell two instances apart).
  virtual std::string state_key() const { return ""; }
  virtual serialize::PyValue state_dict() const { return {}; }
  virtual void load_state_dict(FitState&, const serialize::PyValue&) {}
  // Lightning's on_save_checkpoint: the captured state before it is written (every
  // callback's state_dict() is in it); a callback may rearrange it, as
  // WeightAveraging puts its averaged weights in state_dict.
  virtual void on_save_checkpoint(FitState&, training::CheckpointState&) {}
  // Lightning's on_load_checkpoint: the checkpoint a run resumes from, after the
  // model has its state_dict and the callbacks their state, before on_fit_start.
  virtual void on_load_checkpoint(FitState&, const training::CheckpointState&) {}
  // Checkpoint writers run after every other callback at each hook (Lightning
  // orders ModelCheckpoint last), so the state they save is already updated.
  virtual bool saves_checkpoints() const { return false; }

  // --- test ---
  virtual void on_test_start(TestState&) {}
  virtual void on_test_batch_end(TestState&, const Batch&, const Columns&) {}
  virtual void on_test_end(TestState&) {}
};

// The callbacks of a run, called in order.
class CallbackList {
 public:
  void add(std::unique_ptr<Callback> callback) { callbacks_.push_back(std::move(callback)); }
  bool empty() const { return callbacks_.empty(); }

  template <class Hook, class... Args>
  void call(Hook hook, Args&&... args) {
    for (auto& c : callbacks_) ((*c).*hook)(args...);
  }
  const std::vector<std::unique_ptr<Callback>>& all() const { return callbacks_; }
  // Checkpoint writers last, the others in their order (see saves_checkpoints).
  void order_checkpoint_writers_last() {
    std::stable_partition(callbacks_.begin(), callbacks_.end(), [](const auto& c) { return !c->saves_checkpoints(); });
  }

 private:
  std::vector<std::unique_ptr<Callback>> callbacks_;
};

}  // namespace salt::callbacks
