// lightning.pytorch.callbacks.BatchSizeFinder: before the run trains, the
// largest data.batch_size that fits, found as Lightning's scale_batch_size
// does: from init_val, doubled after each trial of steps_per_trial optimizer
// steps (and as many validation batches) until one runs out of memory, the
// dataset is no larger than the batch, max_trials or max_val (power: the last
// size that fitted, halved after a failure; binsearch: then a binary search
// between the last fit and the failure, less `margin`). The weights are put
// back after every trial; config.yaml records the size found.
//
// As in Lightning (docs/migrating.md): the trials train on the loaders as they
// were last made, so the first one on the configured batch size (init_val's
// adjustment does not reload them), and each size change, and the search's end,
// makes them again; the trials' draws from torch's generator (their batch
// orders, dropout, the reloads' base seeds) are not undone; and the run trains
// on the one-cycle schedule planned for the configured size (a size that needs
// more steps than it has is refused before training, where salt would stop at
// the first step past it).
//
// One difference: a size with no full batch in the training set counts as the
// end of the search (salt-cpp drops the partial batch, so it could not train),
// where Lightning would keep doubling past the dataset once. As in Lightning:
// refused on several processes; skipped under fast_dev_run. Also skipped when
// resuming (the checkpoint's batch size stays).
#include <spdlog/spdlog.h>

#include "training/callback_registry.h"
#include "core/errors.h"

namespace salt::callbacks {
namespace {

struct BatchSizeFinderOptions {
  std::string mode = "power";
  int64_t steps_per_trial = 3;
  int64_t init_val = 2;
  int64_t max_trials = 25;
  std::string batch_arg_name = "batch_size";
  double margin = 0.05;
  int64_t max_val = 8192;
};

const config::Binding<BatchSizeFinderOptions>& batch_size_finder_binding() {
  using namespace config;
  static const auto b =
      Binding<BatchSizeFinderOptions>({})
          .arg("mode", SALT_FIELD(mode), "power: double until a failure; binsearch: then search between.",
               t_choice({"power", "binsearch"}))
          .arg("steps_per_trial", SALT_FIELD(steps_per_trial), "Optimizer steps (and validation batches) per trial.",
               at_least(t_int(), 1))
          .arg("init_val", SALT_FIELD(init_val), "The first batch size tried.", at_least(t_int(), 1))
          .arg("max_trials", SALT_FIELD(max_trials), "Most trials.", at_least(t_int(), 1))
          .arg("batch_arg_name", SALT_FIELD(batch_arg_name), "The batch size's name: salt's data.batch_size.",
               t_choice({"batch_size"}))
          .arg("margin", SALT_FIELD(margin), "binsearch: the size found is reduced by this fraction.")
          .arg("max_val", SALT_FIELD(max_val), "The largest batch size considered.", at_least(t_int(), 1));
  return b;
}

class BatchSizeFinder : public Callback {
 public:
  explicit BatchSizeFinder(BatchSizeFinderOptions o) : o_(std::move(o)) {
    if (!(o_.margin >= 0 && o_.margin < 1))
      throw UsageError("BatchSizeFinder: `margin` should be between 0 and 1. Found margin=" + std::to_string(o_.margin));
  }

  void on_setup(FitState& s) override {
    const auto& t = s.setup->run.trainer;
    if (t.num_devices * t.num_nodes > 1)
      throw UsageError("The Batch size finder is not supported with distributed strategies.");
  }

  void tune(FitState& s) override {
    if (s.dev_run) return spdlog::warn("Skipping batch size scaler since `fast_dev_run` is enabled.");
    if (!s.resumed_from.empty())
      return spdlog::info("BatchSizeFinder: skipped, the run resumes from {} with its batch size",
                          s.resumed_from.string());
    state_ = &s;
    size_ = s.setup->run.data.batch_size;
    adjust(o_.init_val);
    int64_t found = o_.mode == "power" ? power_scaling() : binsearch_scaling();
    found = std::max<int64_t>(found, 1);
    s.actions.reload_loaders(found);  // Lightning's restore: the loaders made again at the size found
    s.actions.edit_config(config::ConfigEdit::set_batch_size(found));
    spdlog::info("Finished batch size finder, will continue with full run using batch size {}", found);
    state_ = nullptr;
  }

 private:
  enum class Trial { kFits, kOutOfMemory, kNoBatch };

  Trial trial() {
    TrialSpec spec;
    spec.steps = o_.steps_per_trial;
    spec.val_batches = o_.steps_per_trial;
    const auto r = state_->actions.run_trial(spec);
    if (r.batches_per_epoch <= 0) {
      spdlog::info("Batch size {} has no full batch of the {} training jets", r.batch_size, state_->train_rows);
      return Trial::kNoBatch;
    }
    return r.out_of_memory ? Trial::kOutOfMemory : Trial::kFits;
  }

  // Lightning's _adjust_batch_size: nothing changes once the batch is as large
  // as the training set; otherwise the new size (value, or size x factor) up to
  // max_val. Returns whether it changed.
  bool adjust(std::optional<int64_t> value, double factor = 1, const char* desc = nullptr) {  // growing
    if (size_ >= state_->train_rows) {
      spdlog::info("The batch size {} is greater or equal than the length of your dataset: {}.", size_,
                   state_->train_rows);
      return false;
    }
    int64_t next = value ? *value : static_cast<int64_t>(static_cast<double>(size_) * factor);
    if (next > o_.max_val) {
      if (desc) spdlog::info("Batch size {} exceeds max_val limit {}, capping at {}", next, o_.max_val, o_.max_val);
      next = o_.max_val;
    }
    if (desc) spdlog::info("Batch size {} {}, trying batch size {}", size_, desc, next);
    const bool changed = next != size_;
    size_ = next;
    return changed;
  }

  // After a failure (Lightning's _adjust_batch_size with desc "failed"; a size
  // with no full batch fails here too, so the dataset check does not apply), and
  // the loaders made again.
  void shrink(int64_t next) {
    spdlog::info("Batch size {} failed, trying batch size {}", size_, next);
    size_ = next;
    state_->actions.reload_loaders(size_);
  }

  // A size that changed after a trial that fitted: the loaders made again.
  bool grow(std::optional<int64_t> value, double factor) {
    if (!adjust(value, factor, "succeeded")) return false;
    state_->actions.reload_loaders(size_);
    return true;
  }

  int64_t power_scaling() {
    bool any_success = false;
    int64_t last_fit = size_;
    for (int64_t i = 0; i < o_.max_trials; ++i) {
      if (size_ >= o_.max_val) {
        spdlog::info("Reached the maximum batch size limit of {}. Stopping search.", o_.max_val);
        break;
      }
      const auto t = trial();
      if (t == Trial::kNoBatch) return any_success ? last_fit : size_;
      if (t == Trial::kFits) {
        last_fit = size_;
        if (i + 1 >= o_.max_trials || !grow(std::nullopt, 2.0)) break;
        any_success = true;
      } else {
        shrink(size_ / 2);
        if (any_success) break;
      }
    }
    return size_;
  }

  int64_t binsearch_scaling() {
    int64_t low = 1, count = 0;
    std::optional<int64_t> high;
    while (true) {
      if (size_ >= o_.max_val) {
        spdlog::info("Reached the maximum batch size limit of {}. Stopping search.", o_.max_val);
        break;
      }
      const auto t = trial();
      if (t == Trial::kFits) {
        if (++count >= o_.max_trials) break;
        low = size_;
        if (high) {
          if (*high - low <= 1) break;
          if (!grow((*high + low) / 2, 1)) break;
        } else if (!grow(std::nullopt, 2.0)) {
          break;
        }
      } else {  // out of memory, or no full batch: too large either way
        if (t == Trial::kNoBatch && count == 0) return size_;
        high = size_;
        shrink((*high + low) / 2);
        if (*high - low <= 1) break;
      }
    }
    return with_margin(size_);
  }

  int64_t with_margin(int64_t size) const {
    if (o_.margin <= 0) return size;
    const auto reduced = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(size) * (1 - o_.margin)));
    if (reduced != size)
      spdlog::info("Applying margin of {:.1f}%, reducing batch size from {} to {}", 100 * o_.margin, size, reduced);
    return reduced;
  }

  BatchSizeFinderOptions o_;
  FitState* state_ = nullptr;
  int64_t size_ = 0;  // Lightning's datamodule.batch_size during the search
};

const bool kBatchSizeFinderRegistered = register_callback(
    {{"lightning.pytorch.callbacks.BatchSizeFinder", "callback", batch_size_finder_binding().type(),
      "Finds the largest batch size that fits before training.", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.BatchSizeFinder", "lightning.pytorch.callbacks.batch_size_finder.BatchSizeFinder"}},
     [](const YAML::Node& args) { return std::make_unique<BatchSizeFinder>(batch_size_finder_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
