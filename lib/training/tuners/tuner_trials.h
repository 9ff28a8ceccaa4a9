// The tuners' trials (BatchSizeFinder, LearningRateFinder; callbacks::TrialSpec):
// a few training steps at a batch size, on the run's model and data, through the
// run's TrainStep (training/step/train_step.h) with an optimizer and loaders of their
// own, then a few validation batches; the weights and generators are put back
// afterwards.
#pragma once
#include <cstdint>
#include <memory>

#include "data/loader.h"
#include "training/callback.h"
#include "training/run_setup.h"
#include "training/step/train_step.h"

namespace salt::parallel {
class Session;
}

namespace salt::training {

class TunerTrials {
 public:
  // `setup` is read at each trial (the model, model.optimizer and lrs_config, the
  // seed): tuners change it between trials. `step`: the run's step (fit_step_options
  // and its gradient sync); a trial gets no CUDA graphs and a fresh loss scaler.
  // `session`: null on one process, else the trial's losses are averaged over ranks.
  TunerTrials(RunSetup& setup, TrainStepOptions step, int64_t accumulate_grad_batches,
              std::shared_ptr<data::H5Reader> train_reader, std::shared_ptr<data::H5Reader> val_reader,
              data::LoaderOptions loader, parallel::Session* session);

  callbacks::TrialResult run(const callbacks::TrialSpec& spec);

 private:
  void steps(const callbacks::TrialSpec& spec, const data::SamplerOptions& sampler, callbacks::TrialResult& result);
  void validation(const callbacks::TrialSpec& spec);

  RunSetup& setup_;
  TrainStepOptions step_;
  int64_t accumulate_;
  std::shared_ptr<data::H5Reader> train_reader_, val_reader_;
  data::LoaderOptions loader_;
  parallel::Session* session_;
  int rank_ = 0, world_ = 1;
};

}  // namespace salt::training
