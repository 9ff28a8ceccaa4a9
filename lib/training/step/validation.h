// One validation pass: the model over a loader's epoch in eval mode, losses summed
// per task and weighted by jets. Shared by `salt fit` (after each epoch) and
// `salt validate`; its step, evaluation_step, is `salt test`'s too.
#pragma once
#include <functional>
#include <torch/torch.h>

#include <map>
#include <optional>
#include <string>

#include "data/batch.h"
#include "data/loader.h"
#include "models/salt_wrapper.h"
#include "training/step/batch_device.h"
#include "training/step/forward_batch.h"
#include "training/step/step_context.h"

namespace salt::training {

// Called after each batch with its index, the model's output and the batch (on the
// device): progress display, callbacks that look at predictions.
using BatchDone = std::function<void(int64_t batch, const models::ModelOutput& out, const Batch& batch_on_device)>;

// Sums of per-task losses weighted by batch size, for epoch means. The sums stay
// on the model's device until they are needed (settle, means): adding a batch
// reads nothing back, so a GPU step never waits for its losses.
struct LossTotals {
  std::map<std::string, double> sums;  // "loss", "<task>_loss", as of the last settle()
  double jets = 0;

  // Nothing for an output without a loss (a batch without labels).
  void add(const models::ModelOutput& out, int64_t jets_in_batch);
  // Moves the device sums into `sums` (one read of the device).
  void settle();
  // "<stage>/loss", "<stage>/<task>_loss": jet-weighted means (settles first).
  std::map<std::string, double> means(const std::string& stage);

 private:
  std::map<std::string, torch::Tensor> pending_;  // float64 on the device
};

// One evaluation batch, as validation and `salt test` take it (salt's shared_step):
// the batch copied to the device and the forward pass at the run's autocast, without
// gradients, given the batch's labels; where the batch has labels, its losses go into
// `totals` (what validation logs as val/..., `salt test` prints as test/...). The
// batch crosses, and the model computes, as the command's StepContext says.
struct EvaluatedBatch {
  DeviceBatch batch;
  models::ModelOutput out;  // the predictions; loss and losses defined where the batch has labels
};
EvaluatedBatch evaluation_step(models::SaltWrapperImpl& model, Batch batch, const StepContext& step,
                               LossTotals& totals);

// Told the seconds each batch was waited for (the loader falling behind).
using DataWait = std::function<void(double seconds)>;

// Runs `batches` batches of `loader`'s epoch `epoch` through `model` (no gradients).
// Polls for Ctrl-C between batches when `check_stop` is set; `on_batch` and
// `on_wait` may be empty.
LossTotals validation_pass(models::SaltWrapper& model, data::Loader& loader, int64_t epoch, int64_t batches,
                           const StepContext& step, const BatchDone& on_batch, bool check_stop, const DataWait& on_wait);

}  // namespace salt::training
