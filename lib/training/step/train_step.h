// One training step, as every caller takes it: `salt fit`'s loop, the tuners'
// trials (training/tuners/tuner_trials.h) and the benches (bench_model, bench_fit). A
// step is forward_backward for each of its batches (the forward pass under
// autocast, the loss divided by the batches per step and scaled for 16-mixed,
// backward; the ranks' gradients reduced at the last), then apply (unscale, clip,
// the optimizer's step, zero the gradients). TrainStep owns what the step needs
// between calls: the loss scaler, the CUDA graphs (SALT_CUDA_GRAPHS, step_graphs.h),
// the limit on how far the host runs ahead of the card (SALT_MAX_STEPS_AHEAD,
// steps_ahead.h), the meter of host reads and the watch for a non-finite loss.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "config/trainer_config.h"
#include "training/step/batch_device.h"
#include "training/step/forward_batch.h"
#include "training/optim/grad_scaler.h"
#include "training/step/step_context.h"
#include "training/step/step_options.h"

namespace salt::parallel {
class GradSync;
}

namespace salt::training {

class Optimization;
class SimpleProfiler;
class StepGraphs;

// How the step is computed; fit_step_options gives salt fit's for a trainer config.
struct TrainStepOptions {
  using GradSyncPointer = parallel::GradSync*;  // (TORCH_ARG writes `const type&`: a pointer needs a name)
  using ProfilerPointer = SimpleProfiler*;
  // The device, autocast, transfer, kernels and graphs' choice (make_step_context).
  TORCH_ARG(StepContext, context);
  // 16-mixed on CUDA: float16 gradients need loss scaling (Lightning's GradScaler).
  TORCH_ARG(bool, loss_scaling) = false;
  // The scaler's state to start from (a resumed run's checkpoint), else torch's defaults.
  TORCH_ARG(std::optional<GradScalerState>, scaler_state);
  TORCH_ARG(std::optional<double>, gradient_clip_val);
  TORCH_ARG(std::string, gradient_clip_algorithm) = "norm";  // "norm" or "value"
  // Data parallel: the gradients' reduction over ranks (not owned); null on one process.
  TORCH_ARG(GradSyncPointer, grad_sync) = nullptr;
  // trainer.profiler (not owned): the forward and backward passes' times.
  TORCH_ARG(ProfilerPointer, profiler) = nullptr;
  // The host at most this many steps ahead of the card (0: no limit).
  TORCH_ARG(int, max_steps_ahead) = 0;
};

// The step `salt fit` runs for trainer config `trainer` on `device`: its precision's
// autocast (autocast_for), loss scaling for float16, its gradient clipping,
// SALT_MAX_STEPS_AHEAD's limit and SALT_CUDA_GRAPHS.
// `switches`: the run's StepOptions (graphs, steps ahead, transfer, kernels).
TrainStepOptions fit_step_options(const config::TrainerConfig& trainer, const torch::Device& device,
                                  const StepOptions& switches);
// The same around a context already decided (the fit's own: make_step_context).
TrainStepOptions fit_step_options(const config::TrainerConfig& trainer, const StepContext& context,
                                  const StepOptions& switches);

// The batches of one optimizer step: how many, and whether this one is the last
// (the step's gradients are then complete: the ranks reduce them).
struct Accumulation {
  int64_t batches = 1;
  bool last = true;
};

class TrainStep {
 public:
  TrainStep(models::SaltWrapperImpl& model, TrainStepOptions options);
  ~TrainStep();
  TrainStep(const TrainStep&) = delete;
  TrainStep& operator=(const TrainStep&) = delete;

  // The forward pass (under autocast) and the backward pass of one batch; the loss
  // is divided by accumulation.batches. A replay of a CUDA graph (start_graphs)
  // when there is one and a step is one batch. `static_rows`: an eager step under
  // static rows, its capacities noted there (what a graph replays; bench_model
  // times it); graphs make their own.
  models::ModelOutput forward_backward(const DeviceBatch& batch, Accumulation accumulation = {},
                                       models::StaticRows* static_rows = nullptr);
  // A loader's batch on the step's device, as its options.transfer say.
  DeviceBatch to_device(Batch batch) const {
    return batch_to_device(std::move(batch), options_.context().device(), options_.context().transfer());
  }
  // Unscale (16-mixed), clip, step, zero the gradients: the end of every optimizer
  // step. `before_clip` sees the final, unscaled gradients.
  void apply(Optimization& optimization, const std::function<void()>& before_clip = {});

  // Told as each phase of forward_backward starts ("forward", "backward", or "graph"
  // for a replay): bench_model's sync probe.
  void set_phase_observer(std::function<void(const char*)> observer) { at_phase_ = std::move(observer); }

  // With options.context().graphs wanted: CUDA graphs for the steps from now on
  // (training/step/step_graphs.h) where `refusal` (decide_graphs) is empty, else one
  // line saying why the steps run eagerly; stop_graphs logs what they did and ends them.
  void start_graphs(const std::string& refusal);
  void stop_graphs();
  // What the graphs did so far (after stop_graphs: in all); zeros when none ran.
  GraphsCount graphs_count() const;

  // A non-finite loss stops the run. On one process the first step with one is
  // kept on the device (watch_finite) and read when asked (first_nonfinite_step),
  // so a step never waits for its loss; with several ranks (`read_now`) the loss is
  // read at once, as they agree at every step anyway (nonfinite_seen).
  void watch_finite(const torch::Tensor& loss, int64_t step, bool read_now);
  int64_t first_nonfinite_step();  // -1: none (one read of the device)
  bool nonfinite_seen() const { return nonfinite_seen_; }

  // Around each training batch: the host reads of device values between them
  // (counted when `count_reads`), and the steps-ahead limit on a card.
  void batch_started();
  void batch_done(bool count_reads);
  double host_reads_per_step() const;
  // The host reads' and the steps-ahead limit's lines at the end of a fit.
  void report() const;

  GradScaler* scaler() { return scaler_ ? &*scaler_ : nullptr; }
  const TrainStepOptions& options() const { return options_; }
  const StepContext& context() const { return options_.context(); }

 private:
  // `observed`: told to the phase observer (not inside a graph's capture);
  // `static_rows` as forward_backward's.
  models::ModelOutput eager_forward_backward(const DeviceBatch& batch, Accumulation accumulation, bool observed,
                                             models::StaticRows* static_rows);
  void clip_gradients();
  void phase(const char* name) const {
    if (at_phase_) at_phase_(name);
  }

  models::SaltWrapperImpl& model_;
  TrainStepOptions options_;
  std::optional<GradScaler> scaler_;
  std::unique_ptr<StepGraphs> graphs_;
  GraphsCount graphs_count_;  // kept from stop_graphs
  struct Meters;
  std::unique_ptr<Meters> meters_;  // host reads, steps ahead
  torch::Tensor first_nonfinite_;   // the first step with a non-finite loss (-1: none), on the device
  bool nonfinite_seen_ = false;
  std::function<void(const char*)> at_phase_;
};

}  // namespace salt::training
