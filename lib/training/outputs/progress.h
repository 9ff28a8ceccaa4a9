// Training progress: a one-line bar redrawn in place on a terminal (stage, epoch,
// step, the stage's mean loss so far, jets/s, the stage's ETA and the whole run's),
// plain lines every `refresh_rate` steps otherwise (batch logs). Everything goes
// to stderr.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

namespace salt::training {

// What is left of the run after the stage now running, for the whole-run ETA.
struct RunLeft {
  int64_t train_batches = 0;  // in later epochs
  int64_t validations = 0;    // validation passes still to come, this epoch's included
  int64_t val_batches = 0;    // per validation pass
};

// A run's plan in batches, as fit() settles it.
struct RunSchedule {
  int64_t max_epochs = 0;      // <= 0: none (max_steps ends the run)
  int64_t max_steps = -1;      // <= 0: none
  int64_t accumulate = 1;      // batches per optimizer step
  int64_t train_batches = 0;   // per epoch
  int64_t val_batches = 0;     // per validation pass (0: no validation)
  int64_t val_every = 1;       // check_val_every_n_epoch
};

// What is left after the stage now running: training (in_validation false) or
// validating (true) epoch `epoch` with `global_step` steps taken before it.
RunLeft run_left(const RunSchedule& plan, bool in_validation, int64_t epoch, int64_t global_step);

class Progress {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic
  Progress(bool enabled, int refresh_rate, std::FILE* out = stderr, Clock clock = {});
  // max_epochs <= 0: a stage outside epochs (salt test), drawn without "epoch i/n".
  void start(const std::string& stage, int64_t epoch, int64_t max_epochs, int64_t total_batches);
  void set_run_left(const RunLeft& left) {
    left_ = left;
    has_left_ = true;
  }
  // `loss` enters the stage's jet-weighted mean, the figure the bar shows: at the
  // end of a validation it is the logged val/loss (one process).
  void update(int64_t batch, double loss, int64_t jets_in_batch);
  // The same, the stage's mean loss asked of `mean_loss` only when the bar is drawn
  // (reading a GPU's loss waits for the GPU).
  void update(int64_t batch, int64_t jets_in_batch, std::function<double()> mean_loss);
  void finish(const std::string& summary);

  double mean_loss() const {
    if (mean_loss_) return mean_loss_();
    return jets_ > 0 ? loss_sum_ / jets_ : 0;
  }
  int64_t jets() const { return static_cast<int64_t>(jets_); }
  // Seconds until the stage ends and until the run ends (NaN before a measurement).
  double stage_eta() const;
  double run_eta() const;

  static bool stderr_is_terminal();
  static std::string format_duration(double seconds);

 private:
  void draw();
  double seconds_per_batch(const std::string& stage) const;

  bool enabled_;
  bool tty_;
  int refresh_rate_;
  std::FILE* out_;
  Clock clock_;
  std::string stage_;
  int64_t epoch_ = 0, max_epochs_ = 0, total_ = 0, done_ = 0;
  double loss_sum_ = 0, jets_ = 0;
  std::function<double()> mean_loss_;  // set by the lazy update
  double rate_ = 0;  // jets/s, exponential moving average
  // Seconds per batch of each stage, a moving average kept across epochs: the
  // run's ETA needs the validation's pace while training and the other way round.
  std::map<std::string, double> batch_seconds_;
  RunLeft left_;
  bool has_left_ = false;
  double last_ = 0, start_ = 0;
};

}  // namespace salt::training
