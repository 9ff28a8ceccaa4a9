#include "training/tuners/tuner_trials.h"

#include <algorithm>
#include <new>
#include <optional>

#include "core/memory.h"
#include "parallel/grad_sync.h"
#include "parallel/session.h"
#include "models/packing/host_read.h"
#include "training/step/batch_device.h"
#include "training/checkpoints/model_snapshot.h"
#include "training/optim/optimization.h"
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
                         data::LoaderOptions loader, parallel::Session* session)
    : setup_(setup),
      step_(std::move(step)),
      accumulate_(accumulate_grad_batches),
      train_reader_(std::move(train_reader)),
      val_reader_(std::move(val_reader)),
      loader_(loader),
      session_(session),
      rank_(session ? session->rank() : 0),
      world_(session ? session->size() : 1) {
  step_.context().graphs().wanted = false;
  step_.scaler_state(std::nullopt);
}

callbacks::TrialResult TunerTrials::run(const callbacks::TrialSpec& spec) {
  callbacks::TrialResult result;
  const auto sampler = data::SamplerOptions::training(train_reader_->num_rows(), spec.batch_size, setup_.seed)
                           .set_shard(rank_, world_);
  result.batches_per_epoch = data::BatchSampler(sampler).batches_per_epoch();
  if (result.batches_per_epoch <= 0 || spec.steps <= 0) return result;
  const ModelSnapshot snapshot(*setup_.model, step_.context().device());
  try {
    steps(spec, sampler, result);
    if (spec.val_batches > 0) validation(spec);
  } catch (const std::bad_alloc&) {
    result.out_of_memory = true;
  } catch (const c10::Error& e) {
    if (!is_out_of_memory(e)) throw;
    result.out_of_memory = true;
  }
  return result;
}

// The run's step on an optimizer of the trial's own; spec.lr_at overrides the
// schedule's learning rate and holds the momentum it starts at.
void TunerTrials::steps(const callbacks::TrialSpec& spec, const data::SamplerOptions& sampler,
                        callbacks::TrialResult& result) {
  Optimization optimization(setup_.model->named_parameters(), optimizer_kind(setup_.run.model.optimizer),
                            setup_.run.model.lrs, std::max<int64_t>(spec.steps, 1), 0, setup_.model->mup_width_mults);
  const double beta1 = optimization.current_beta1();  // the momentum the schedule starts at, held
  TrainStep step(*setup_.model, step_);
  data::Loader loader(train_reader_, sampler, loader_);
  int64_t epoch = 0;
  loader.start_epoch(epoch);
  setup_.model->train();
  for (int64_t i = 0; i < spec.steps; ++i) {
    if (spec.lr_at) optimization.override_schedule(spec.lr_at(i), beta1);
    double loss = 0;
    for (int64_t k = 0; k < accumulate_; ++k) {
      auto batch = loader.next();
      if (!batch) {  // as Lightning's loop, on into the next epoch
        loader.stop();
        loader.start_epoch(++epoch);
        batch = loader.next();
      }
      const auto out = step.forward_backward(step.to_device(std::move(*batch)),
                                             Accumulation{accumulate_, k + 1 == accumulate_});
      loss += host_read<double>(out.loss) / static_cast<double>(accumulate_);
    }
    if (step_.grad_sync()) step_.grad_sync()->finish();
    step.apply(optimization);
    ++result.steps_run;
    if (session_) loss = session_->sum({loss})[0] / world_;
    if (spec.after_step && !spec.after_step(i, loss)) break;
  }
  loader.stop();
}

void TunerTrials::validation(const callbacks::TrialSpec& spec) {
  const auto sampler =
      data::SamplerOptions::evaluation(val_reader_->num_rows(), spec.batch_size).set_shard(rank_, world_);
  data::Loader loader(val_reader_, sampler, loader_);
  const int64_t batches = std::min(spec.val_batches, loader.batches_per_epoch());
  validation_pass(setup_.model, loader, 0, batches, step_.context(), {}, false, {});
}

}  // namespace salt::training
