#include "training/step/train_step.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "parallel/grad_sync.h"
#include "models/packing/host_read.h"
#include "training/optim/grad_clip.h"
#include "training/optim/optimization.h"
#include "training/outputs/profiler.h"
#include "training/step/step_graphs.h"
#include "training/step/steps_ahead.h"

namespace salt::training {

TrainStepOptions fit_step_options(const config::TrainerConfig& trainer, const torch::Device& device,
                                  const StepOptions& switches) {
  return fit_step_options(trainer, make_step_context(trainer, device, switches), switches);
}

TrainStepOptions fit_step_options(const config::TrainerConfig& trainer, const StepContext& context,
                                  const StepOptions& switches) {
  return TrainStepOptions()
      .context(context)
      .loss_scaling(context.autocast().enabled && context.autocast().dtype == torch::kFloat16)
      .gradient_clip_val(trainer.gradient_clip_val)
      .gradient_clip_algorithm(trainer.gradient_clip_algorithm)
      .max_steps_ahead(switches.steps_ahead.value);
}

struct TrainStep::Meters {
  HostReadMeter host_reads;
  cuda::StepsAhead steps_ahead;
};

TrainStep::TrainStep(models::SaltWrapperImpl& model, TrainStepOptions options)
    : model_(model),
      options_(std::move(options)),
      meters_(std::make_unique<Meters>(Meters{{}, cuda::StepsAhead(options_.max_steps_ahead())})) {
  if (options_.loss_scaling()) scaler_.emplace(options_.scaler_state().value_or(GradScalerState{}));
}

TrainStep::~TrainStep() = default;

models::ModelOutput TrainStep::forward_backward(const DeviceBatch& batch, Accumulation accumulation,
                                                models::StaticRows* static_rows) {
  if (!graphs_ || accumulation.batches != 1) return eager_forward_backward(batch, accumulation, true, static_rows);
  phase("graph");
  return graphs_->run(batch, [&](const DeviceBatch& b, models::StaticRows* rows) {
    return eager_forward_backward(b, accumulation, false, rows);
  });
}

// With gradient accumulation the loss is divided by the batches per step, and the
// ranks' gradients are reduced only at the step's last batch.
models::ModelOutput TrainStep::eager_forward_backward(const DeviceBatch& batch, Accumulation accumulation,
                                                      bool observed, models::StaticRows* static_rows) {
  models::ModelOutput out;
  {
    if (observed) phase("forward");
    const SimpleProfiler::Scope timed(options_.profiler(), "[Strategy].training_step");
    models::ForwardContext context;
    context.static_rows = static_rows;
    context.kernels = options_.context().kernels();
    out = forward_batch(model_, batch, true, options_.context().autocast(), options_.context().device(), context);
  }
  if (options_.grad_sync()) options_.grad_sync()->begin_backward(accumulation.last);
  auto loss = out.loss / static_cast<double>(accumulation.batches);
  if (scaler_) loss = scaler_->scale(loss);
  if (observed) phase("backward");
  const SimpleProfiler::Scope timed(options_.profiler(), "[Strategy].backward");
  loss.backward();
  return out;
}

void TrainStep::apply(Optimization& optimization, const std::function<void()>& before_clip) {
  if (scaler_) scaler_->unscale(optimization.parameters());  // before clipping, as Lightning
  if (before_clip) before_clip();
  clip_gradients();
  // A scaled step with an inf/NaN gradient is skipped; the schedule still advances.
  optimization.step(!scaler_ || scaler_->gradients_finite());
  if (scaler_) scaler_->update();
  optimization.zero_grad();
}

void TrainStep::clip_gradients() {
  if (!options_.gradient_clip_val()) return;
  if (options_.gradient_clip_algorithm() == "value")
    torch::nn::utils::clip_grad_value_(model_.parameters(), *options_.gradient_clip_val());
  else
    clip_grad_norm(model_.parameters(), *options_.gradient_clip_val());
}

// The training steps' forward and backward passes as CUDA graphs (step_graphs.h)
// where decide_graphs allowed them, else one line saying why not: a warning when
// SALT_CUDA_GRAPHS=1 asked for them, an info line when they were the default on a card.
void TrainStep::start_graphs(const std::string& refusal) {
  const auto& choice = options_.context().graphs();
  if (!choice.wanted) return;
  if (refusal.empty()) {
    graphs_ = std::make_unique<StepGraphs>(model_, options_.context().device());
  } else if (choice.asked) {
    spdlog::warn("SALT_CUDA_GRAPHS=1 but the steps run eagerly: {}", refusal);
  } else if (options_.context().device().is_cuda()) {
    spdlog::info("training steps run eagerly, not as CUDA graphs: {}", refusal);
  }
}

void TrainStep::stop_graphs() {
  if (!graphs_) return;
  graphs_count_ = graphs_count();
  spdlog::info("CUDA graphs: {} captured, {} training steps replayed{}", graphs_count_.captured,
               graphs_count_.replayed, graphs_count_.given_up ? " (then a step waited for the card: eager since)" : "");
  graphs_.reset();
}

GraphsCount TrainStep::graphs_count() const {
  if (!graphs_) return graphs_count_;
  return {graphs_->graphs(), graphs_->replays(), graphs_->given_up()};
}

void TrainStep::watch_finite(const torch::Tensor& loss, int64_t step, bool read_now) {
  if (read_now) {
    if (!std::isfinite(host_read<double>(loss))) nonfinite_seen_ = true;
    return;
  }
  if (!first_nonfinite_.defined())
    first_nonfinite_ = torch::full({}, -1, torch::TensorOptions().dtype(torch::kLong).device(loss.device()));
  first_nonfinite_.masked_fill_(loss.detach().isfinite().logical_not() & (first_nonfinite_ < 0), step);
}

int64_t TrainStep::first_nonfinite_step() {
  if (!first_nonfinite_.defined()) return -1;
  return host_read<int64_t>(first_nonfinite_);
}

void TrainStep::batch_started() { meters_->host_reads.step_start(); }

void TrainStep::batch_done(bool count_reads) {
  if (count_reads) meters_->host_reads.step_done();
  if (options_.context().device().is_cuda()) meters_->steps_ahead.step_issued(options_.context().device().index());
}

double TrainStep::host_reads_per_step() const { return meters_->host_reads.per_step(); }

void TrainStep::report() const {
  const auto& reads = meters_->host_reads;
  if (reads.steps > 0)
    spdlog::info("host reads of device values: {:.2f} per training step outside logging steps ({} steps)",
                 reads.per_step(), reads.steps);
  const auto& ahead = meters_->steps_ahead;
  if (ahead.depth() > 0 && ahead.steps() > 0)
    spdlog::info("host at most {} steps ahead of the card (SALT_MAX_STEPS_AHEAD): waited at {} of {} steps",
                 ahead.depth(), ahead.waits(), ahead.steps());
}

}  // namespace salt::training
