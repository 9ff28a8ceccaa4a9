// lightning.pytorch.callbacks.LearningRateFinder: before the run trains, a range
// test of learning rates (Lightning's lr_find) from min_lr to max_lr over
// num_training_steps optimizer steps on the training data, stopping early once
// the smoothed loss diverges; then the weights and generators are put back, so
// the run trains as it would have without it. The suggestion is the learning
// rate of the loss's steepest descent (Lightning's suggestion()).
//
// As in Lightning (docs/migrating.md): the trial trains on the run's first
// training iterator (the epoch's order from torch's generator, as the run's first
// epoch would have it) and the loaders are made again after it, inside
// isolate_rng: the same run without loader workers, and with workers the same
// but for the first epoch's order, which the reload draws. On several processes
// the losses are rank 0's, which Lightning broadcasts.
//
// Where the result goes: Lightning sets the model's `lr`/`learning_rate`
// attribute, which salt's model does not have (salt's schedule is
// model.lrs_config), so update_attr needs attr_name: lrs_config.max (the
// one-cycle peak), lrs_config.initial or lrs_config.end; the value is also
// written into config.yaml. The sweep is saved as <run>/lr_find.csv and
// lr_find.png/.pdf with the suggestion marked. Skipped under fast_dev_run (as
// Lightning) and when resuming (a resumed run keeps its schedule).
#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>
#include <optional>

#include "callbacks/monitor.h"
#include "training/callback_registry.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "plot/figure.h"
#include "training/tuners/lr_finder.h"

namespace salt::callbacks {
namespace {

struct LrFinderOptions {
  double min_lr = 1e-8;
  double max_lr = 1;
  int64_t num_training_steps = 100;
  std::string mode = "exponential";
  std::optional<double> early_stop_threshold = 4.0;
  bool update_attr = true;
  std::string attr_name;
};

const config::Binding<LrFinderOptions>& learning_rate_finder_binding() {
  using namespace config;
  static const auto b =
      Binding<LrFinderOptions>({})
          .arg("min_lr", SALT_FIELD(min_lr), "Smallest learning rate tried (the first step's).")
          .arg("max_lr", SALT_FIELD(max_lr), "Largest learning rate tried (the last step's).")
          .arg("num_training_steps", SALT_FIELD(num_training_steps), "Optimizer steps (learning rates) to try.",
               at_least(t_int(), 1))
          .arg("mode", SALT_FIELD(mode), "How the learning rate grows from step to step.",
               t_choice({"exponential", "linear"}))
          .arg("early_stop_threshold", SALT_FIELD(early_stop_threshold),
               "Stop once the smoothed loss exceeds this times the best (null: never).")
          .arg("update_attr", SALT_FIELD(update_attr), "Train with the suggested learning rate (needs attr_name).")
          .arg("attr_name", SALT_FIELD(attr_name),
               "What the suggestion sets: lrs_config.max, lrs_config.initial or lrs_config.end.");
  return b;
}

class LearningRateFinder : public Callback {
 public:
  explicit LearningRateFinder(LrFinderOptions o) : o_(std::move(o)) {
    if (!(o_.min_lr > 0) || !(o_.max_lr > o_.min_lr))
      throw UsageError("LearningRateFinder: min_lr and max_lr must satisfy 0 < min_lr < max_lr");
    if (!o_.update_attr) return;
    if (!config::lrs_field(o_.attr_name))
      throw UsageError("LearningRateFinder: update_attr needs attr_name: lrs_config.max, lrs_config.initial or "
                       "lrs_config.end (salt's model has no `lr` or `learning_rate`" +
                       std::string(o_.attr_name.empty() ? "" : "; got '" + o_.attr_name + "'") +
                       "), or set update_attr: false");
  }

  void tune(FitState& s) override {
    if (s.dev_run) return spdlog::warn("Skipping learning rate finder since `fast_dev_run` is enabled.");
    if (!s.resumed_from.empty())
      return spdlog::info("LearningRateFinder: skipped, the run resumes from {} and keeps its schedule",
                          s.resumed_from.string());
    sweep();
    const auto result = s.actions.run_trial(trial_spec(s));
    if (result.out_of_memory)
      throw UsageError("LearningRateFinder: out of memory at data.batch_size " + std::to_string(result.batch_size) +
                       " (step " + std::to_string(result.steps_run + 1) + ")");
    if (lrs_.size() != static_cast<std::size_t>(o_.num_training_steps))
      spdlog::info("LR finder stopped early after {} steps due to diverging loss.", lrs_.size());
    const auto best = training::lr_suggestion_index(lrs_, losses_);
    if (!best)
      spdlog::error("Failed to compute suggestion for learning rate because there are not enough points. Increase "
                    "the loop iteration limits or the size of your dataset/dataloader.");
    else
      spdlog::info("LearningRateFinder: suggested learning rate {} (steepest loss descent, step {} of {})",
                   python_float_repr(lrs_[*best]), *best, lrs_.size());
    if (s.process.main_rank && !s.dev_run && !s.run_dir.empty()) save(s.run_dir, best);
    if (o_.update_attr && best) apply(s, lrs_[*best]);
  }

 private:
  void sweep() {
    lrs_.clear();
    losses_.clear();
    smoother_.emplace(o_.early_stop_threshold);
  }

  TrialSpec trial_spec(const FitState& s) {
    const training::LrSweep sweep{o_.min_lr, o_.max_lr, o_.num_training_steps, o_.mode == "exponential"};
    TrialSpec spec;
    spec.steps = o_.num_training_steps;
    spec.isolate_rng = true;  // Lightning's LearningRateFinder.lr_find
    spec.reload_after = true;
    spec.lr_at = [this, sweep](int64_t step) {
      lrs_.push_back(sweep.lr_at(step));
      return lrs_.back();
    };
    spec.after_step = [this](int64_t step, double loss) {
      losses_.push_back(smoother_->add(loss, step + 1));
      return !smoother_->diverged();
    };
    return spec;
  }

  // salt's model.lrs_config takes the suggestion, and config.yaml records it.
  void apply(FitState& s, double lr) {
    s.actions.edit_config(config::ConfigEdit::set_learning_rate(*config::lrs_field(o_.attr_name), lr));
    spdlog::info("Learning rate set to {} (model.{})", python_float_repr(lr), o_.attr_name);
  }

  void save(const std::filesystem::path& dir, std::optional<std::size_t> best) const {
    std::string csv = "lr,loss\n";
    for (std::size_t i = 0; i < losses_.size(); ++i)
      csv += python_float_repr(lrs_[i]) + "," + python_float_repr(losses_[i]) + "\n";
    write_file_atomic(dir / "lr_find.csv", csv);
    plot::Figure f;
    f.x_label = "Learning rate";
    f.y_label = "Loss";
    f.log_x = o_.mode == "exponential";
    plot::Series sweep{"", lrs_, losses_};
    sweep.x.resize(losses_.size());
    sweep.colour = plot::cycle_colour(0);
    f.series.push_back(sweep);
    if (best) {
      plot::Series mark{fmt::format("suggestion {:.3g}", lrs_[*best]), {lrs_[*best]}, {losses_[*best]}};
      mark.colour = {0.84, 0.15, 0.16};
      mark.markers = true;
      f.series.push_back(mark);
    }
    plot::save(f, dir / "lr_find");
    spdlog::info("LearningRateFinder: the sweep is in {}", (dir / "lr_find.csv").string());
  }

  LrFinderOptions o_;
  std::vector<double> lrs_, losses_;
  std::optional<training::LossSmoother> smoother_;
};

const bool kLearningRateFinderRegistered = register_callback(
    {{"lightning.pytorch.callbacks.LearningRateFinder", "callback", learning_rate_finder_binding().type(),
      "Tries learning rates from min_lr to max_lr before training and suggests one.", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.LearningRateFinder", "lightning.pytorch.callbacks.lr_finder.LearningRateFinder"}},
     [](const YAML::Node& args) { return std::make_unique<LearningRateFinder>(learning_rate_finder_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
