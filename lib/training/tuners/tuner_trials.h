// The tuners' trials (BatchSizeFinder, LearningRateFinder; callbacks::TrialSpec):
// a few training steps on the run's model and data, through the run's TrainStep
// (training/step/train_step.h) with an optimizer and loaders of their own, then a
// few validation batches; the weights are put back afterwards.
//
// The trials draw from torch's generator where Lightning's draw (docs/migrating.md):
// each trains on the training iterator the tuners made last (the run's first, at the
// configured batch size, until a reload), its epochs in salt's order (TrialOrder:
// the run's BatchOrder), an epoch ending inside a trial validates (a base seed) and
// goes on into a new one, and a LearningRateFinder trial stopped by a diverging
// loss validates too. Only a LearningRateFinder trial puts the generators back.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "data/loader.h"
#include "training/callback.h"
#include "training/run_setup.h"
#include "training/step/train_step.h"

namespace salt::parallel {
class Session;
}

namespace salt::training {

// The run's batch order (training/loop/batch_order.h's BatchOrder, rank 0's on
// several processes), as the trials draw it.
struct TrialOrder {
  std::function<std::vector<int64_t>(int64_t full_batches)> train_epoch;  // the next epoch's
  std::function<void()> validation_pass;
  std::function<void(int64_t full_batches)> start_tuning, reload;
};

class TunerTrials {
 public:
  // `setup` is read at each trial (the model, model.optimizer and lrs_config, the
  // batch size the loaders start at): tuners change it between trials. `step`: the
  // run's step (fit_step_options and its gradient sync); a trial gets no CUDA graphs
  // and a fresh loss scaler. `session`: null on one process, else the trials take
  // rank 0's losses.
  TunerTrials(RunSetup& setup, TrainStepOptions step, int64_t accumulate_grad_batches,
              std::shared_ptr<data::H5Reader> train_reader, std::shared_ptr<data::H5Reader> val_reader,
              data::LoaderOptions loader, TrialOrder order, parallel::Session* session);

  callbacks::TrialResult run(const callbacks::TrialSpec& spec);
  void reload_loaders(int64_t batch_size);

 private:
  data::SamplerOptions sampler() const;
  void start();
  void steps(const callbacks::TrialSpec& spec, callbacks::TrialResult& result);
  void validation(const callbacks::TrialSpec& spec);

  RunSetup& setup_;
  TrainStepOptions step_;
  int64_t accumulate_;
  std::shared_ptr<data::H5Reader> train_reader_, val_reader_;
  data::LoaderOptions loader_;
  TrialOrder order_;
  parallel::Session* session_;
  int rank_ = 0, world_ = 1;
  int64_t batch_size_ = 0;  // the loaders' (0: not made yet: the configured size)
};

}  // namespace salt::training
