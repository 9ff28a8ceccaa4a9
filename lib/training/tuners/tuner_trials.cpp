#include "training/tuners/tuner_trials.h"

#include <algorithm>
#include <new>
#include <optional>
#include <stdexcept>

#include "core/memory.h"
#include "models/packing/host_read.h"
#include "parallel/grad_sync.h"
#include "parallel/session.h"
#include "training/checkpoints/model_snapshot.h"
#include "training/checkpoints/rng_state.h"
#include "training/optim/optimization.h"
#include "training/step/batch_device.h"
#include "training/step/validation.h"

namespace salt::training {

namespace {

// Lightning's is_oom_error: CUDA's allocator, or the CPU's.
bool is_out_of_memory(const c10::Error& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;
  return allocation_failure(e.what_without_backtrace());
}

}  // namespace

TunerTrials::TunerTrials(RunSetup& setup, TrainStepOptions step, int64_t accumulate_grad_batches,
                         std::shared_ptr<data::H5Reader> train_reader, std::shared_ptr<data::H5Reader> val_reader,
                         data::LoaderOptions loader, TrialOrder order, parallel::Session* session)
    : setup_(setup),
      step_(std::move(step)),
      accumulate_(accumulate_grad_batches),
      train_reader_(std::move(train_reader)),
      val_reader_(std::move(val_reader)),
      loader_(loader),
      order_(std::move(order)),
      session_(session),
      rank_(session ? session->rank() : 0),
      world_(session ? session->size() : 1) {
  step_.context().graphs().wanted = false;
  step_.scaler_state(std::nullopt);
}

data::SamplerOptions TunerTrials::sampler() const {
  return data::SamplerOptions::training(train_reader_->num_rows(), batch_size_, setup_.seed).set_shard(rank_, world_);
}

// The first trial finds the loaders configure_optimizers made (the configured size).
void TunerTrials::start() {
  if (batch_size_ > 0) return;
  batch_size_ = setup_.run.data.batch_size;
  order_.start_tuning(data::BatchSampler(sampler()).full_batches());
}

void TunerTrials::reload_loaders(int64_t batch_size) {
  start();
  batch_size_ = batch_size;
  order_.reload(data::BatchSampler(sampler()).full_batches());
}

callbacks::TrialResult TunerTrials::run(const callbacks::TrialSpec& spec) {
  start();
  std::optional<RngSnapshot> isolated;  // Lightning's isolate_rng, reload included
  if (spec.isolate_rng) isolated.emplace(step_.context().device());
  callbacks::TrialResult result;
  result.batch_size = batch_size_;
  result.batches_per_epoch = data::BatchSampler(sampler()).batches_per_epoch();
  if (result.batches_per_epoch > 0 && spec.steps > 0) {
    const ModelSnapshot snapshot(*setup_.model);
    try {
      steps(spec, result);
      if (spec.val_batches > 0) validation(spec);
    } catch (const std::bad_alloc&) {
      result.out_of_memory = true;
    } catch (const c10::Error& e) {
      if (!is_out_of_memory(e)) throw;
      result.out_of_memory = true;
    }
  }
  if (spec.reload_after) reload_loaders(batch_size_);
  if (isolated) isolated->restore();
  return result;
}

// The run's step on an optimizer of the trial's own; spec.lr_at overrides the
// schedule's learning rate and holds the momentum it starts at. Lightning's loop:
// an epoch's last batch, or a tuner stopping the trial, is followed by a
// validation (its iterator's base seed; nothing else draws in evaluation), and
// the trial goes on into a new epoch only within trainer.max_epochs.
void TunerTrials::steps(const callbacks::TrialSpec& spec, callbacks::TrialResult& result) {
  Optimization optimization(setup_.model->named_parameters(), optimizer_kind(setup_.run.model.optimizer),
                            setup_.run.model.lrs, std::max<int64_t>(spec.steps, 1), 0, setup_.model->mup_width_mults);
  const double beta1 = optimization.current_beta1();  // the momentum the schedule starts at, held
  TrainStep step(*setup_.model, step_);
  data::Loader loader(train_reader_, sampler(), loader_);
  const int64_t full = loader.sampler().full_batches(), epoch_batches = loader.batches_per_epoch();
  const auto& trainer = setup_.run.trainer;
  int64_t epoch = 0, in_epoch = 0;
  loader.start_epoch(epoch, order_.train_epoch(full));
  setup_.model->train();
  for (int64_t i = 0; i < spec.steps; ++i) {
    if (in_epoch == epoch_batches) {  // as Lightning's loop, on into the next epoch
      if (trainer.max_epochs > 0 && epoch + 1 >= trainer.max_epochs) break;
      loader.stop();
      loader.start_epoch(++epoch, order_.train_epoch(full));
      in_epoch = 0;
    }
    if (spec.lr_at) optimization.override_schedule(spec.lr_at(i), beta1);
    double loss = 0;
    for (int64_t k = 0; k < accumulate_ && in_epoch < epoch_batches; ++k, ++in_epoch) {
      auto batch = loader.next();
      if (!batch) throw std::logic_error("tuner trial: the loader ended before its epoch's last batch");
      const auto out = step.forward_backward(step.to_device(std::move(*batch)),
                                             Accumulation{accumulate_, k + 1 == accumulate_ || in_epoch + 1 == epoch_batches});
      loss += host_read<double>(out.loss) / static_cast<double>(accumulate_);
    }
    if (step_.grad_sync()) step_.grad_sync()->finish();
    step.apply(optimization);
    ++result.steps_run;
    if (session_) loss = session_->sum({rank_ == 0 ? loss : 0.0})[0];
    const bool go_on = !spec.after_step || spec.after_step(i, loss);
    const int64_t every_n = trainer.check_val_every_n_epoch;
    const bool validates = every_n <= 0 || (epoch + 1) % every_n == 0;
    if (validates && (in_epoch == epoch_batches || !go_on)) order_.validation_pass();
    if (!go_on) break;
  }
  loader.stop();
}

void TunerTrials::validation(const callbacks::TrialSpec& spec) {
  const auto sampler =
      data::SamplerOptions::evaluation(val_reader_->num_rows(), batch_size_).set_shard(rank_, world_);
  data::Loader loader(val_reader_, sampler, loader_);
  const int64_t batches = std::min(spec.val_batches, loader.batches_per_epoch());
  validation_pass(setup_.model, loader, 0, batches, step_.context(), {}, false, {});
}

}  // namespace salt::training
