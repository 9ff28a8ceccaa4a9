// One validation pass: the model over a loader's epoch in eval mode, losses summed
// per task and weighted by jets. Shared by `salt fit` (after each epoch) and
// `salt validate`.
#pragma once
#include <functional>
#include <torch/torch.h>

#include <map>
#include <optional>
#include <string>

#include "data/loader.h"
#include "models/salt_wrapper.h"

namespace salt::training {

// Called after each batch with its index, the model's output and the batch (on the
// device): progress display, callbacks that look at predictions.
using BatchDone = std::function<void(int64_t batch, const models::ModelOutput& out, const Batch& batch_on_device)>;

// Sums of per-task losses weighted by batch size, for epoch means.
struct LossTotals {
  std::map<std::string, double> sums;  // "loss", "<task>_loss"
  double jets = 0;

  void add(const models::ModelOutput& out, int64_t jets_in_batch);
  // "<stage>/loss", "<stage>/<task>_loss": jet-weighted means.
  std::map<std::string, double> means(const std::string& stage) const;
};

// Mixed precision of the forward pass: none, or autocast to this dtype.
struct Autocast {
  bool enabled = false;
  torch::ScalarType dtype = torch::kBFloat16;
};

// Runs `batches` batches of `loader`'s epoch `epoch` through `model` (no gradients).
// Polls for Ctrl-C between batches when `check_stop` is set.
LossTotals validation_pass(models::SaltWrapper& model, data::Loader& loader, int64_t epoch, int64_t batches,
                           const torch::Device& device, const Autocast& autocast, const BatchDone& on_batch, bool check_stop);

}  // namespace salt::training
