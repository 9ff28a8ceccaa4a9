#include "training/outputs/progress.h"

#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cmath>

namespace salt::training {
namespace {

std::string format_rate(double per_second) {
  char buf[32];
  if (per_second >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", per_second / 1e6);
  else if (per_second >= 1e3) std::snprintf(buf, sizeof buf, "%.1fk", per_second / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", per_second);
  return buf;
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

RunLeft run_left(const RunSchedule& plan, bool in_validation, int64_t epoch, int64_t global_step) {
  RunLeft left;
  if (plan.train_batches <= 0) return left;
  const int64_t acc = std::max<int64_t>(1, plan.accumulate);
  const int64_t steps_per_epoch = (plan.train_batches + acc - 1) / acc;
  const int64_t steps_done = in_validation ? global_step : global_step + steps_per_epoch;
  int64_t later_epochs = plan.max_epochs > 0 ? std::max<int64_t>(0, plan.max_epochs - epoch - 1) : 0;
  if (plan.max_steps > 0) {
    const int64_t by_steps = (std::max<int64_t>(0, plan.max_steps - steps_done) + steps_per_epoch - 1) / steps_per_epoch;
    later_epochs = plan.max_epochs > 0 ? std::min(later_epochs, by_steps) : by_steps;
  }
  left.train_batches = later_epochs * plan.train_batches;
  left.val_batches = plan.val_batches;
  if (plan.val_batches <= 0) return left;
  // Validation runs every val_every epochs and after the last one.
  const int64_t last = epoch + later_epochs;
  for (int64_t e = in_validation ? epoch + 1 : epoch; e <= last; ++e)
    if ((e + 1) % std::max<int64_t>(1, plan.val_every) == 0 || e == last) ++left.validations;
  return left;
}

std::string Progress::format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

Progress::Progress(bool enabled, int refresh_rate, std::FILE* out, Clock clock)
    : enabled_(enabled),
      tty_(isatty(fileno(out)) != 0),
      refresh_rate_(refresh_rate > 0 ? refresh_rate : 1),
      out_(out),
      clock_(clock ? std::move(clock) : Clock(steady_seconds)) {}

bool Progress::stderr_is_terminal() { return isatty(fileno(stderr)) != 0; }

void Progress::start(const std::string& stage, int64_t epoch, int64_t max_epochs, int64_t total_batches) {
  stage_ = stage;
  epoch_ = epoch;
  max_epochs_ = max_epochs;
  total_ = total_batches;
  done_ = 0;
  loss_sum_ = jets_ = 0;
  mean_loss_ = nullptr;
  rate_ = 0;
  left_ = {};
  has_left_ = false;
  last_ = start_ = clock_();
}

void Progress::update(int64_t batch, int64_t jets_in_batch, std::function<double()> mean_loss) {
  mean_loss_ = std::move(mean_loss);
  update(batch, 0.0, jets_in_batch);
}

void Progress::update(int64_t batch, double loss, int64_t jets_in_batch) {
  const double now = clock_();
  const double dt = now - last_;
  last_ = now;
  done_ = batch + 1;
  loss_sum_ += loss * static_cast<double>(jets_in_batch);
  jets_ += static_cast<double>(jets_in_batch);
  if (dt > 0) {
    // Moving averages: the first batches (warm-up, page cache) should not dominate the ETA.
    const double a = rate_ == 0 ? 1.0 : 0.1;
    rate_ = (1 - a) * rate_ + a * (static_cast<double>(jets_in_batch) / dt);
    auto [it, first] = batch_seconds_.try_emplace(stage_, dt);
    if (!first) it->second = 0.9 * it->second + 0.1 * dt;
  }
  if (!enabled_) return;
  if (done_ % refresh_rate_ == 0 || done_ == total_) draw();
}

double Progress::seconds_per_batch(const std::string& stage) const {
  auto it = batch_seconds_.find(stage);
  return it == batch_seconds_.end() ? NAN : it->second;
}

double Progress::stage_eta() const { return static_cast<double>(total_ - done_) * seconds_per_batch(stage_); }

double Progress::run_eta() const {
  const double train = seconds_per_batch("train");
  double val = seconds_per_batch("val");
  if (std::isnan(val)) val = train;  // before the first validation: no backward pass, so at most this
  double later = 0;
  if (left_.train_batches > 0) later += static_cast<double>(left_.train_batches) * train;
  if (left_.validations > 0 && left_.val_batches > 0)
    later += static_cast<double>(left_.validations * left_.val_batches) * val;
  return stage_eta() + later;
}

void Progress::draw() {
  char epoch[64] = "";
  if (max_epochs_ > 0)
    std::snprintf(epoch, sizeof epoch, " epoch %lld/%lld", static_cast<long long>(epoch_),
                  static_cast<long long>(max_epochs_));
  std::string eta = "ETA " + format_duration(stage_eta());
  if (has_left_) eta += " run " + format_duration(run_eta());
  char loss[48] = "";
  if (std::isfinite(mean_loss())) std::snprintf(loss, sizeof loss, " mean loss %.4f", mean_loss());
  char line[320];
  if (tty_) {
    const int width = 24;
    const int filled = total_ > 0 ? static_cast<int>(width * done_ / total_) : 0;
    std::string bar(static_cast<std::size_t>(filled), '=');
    bar.resize(width, ' ');
    std::snprintf(line, sizeof line, "\r%s%s [%s] %lld/%lld%s %s jets/s %s ", stage_.c_str(), epoch,
                  bar.c_str(), static_cast<long long>(done_), static_cast<long long>(total_), loss,
                  format_rate(rate_).c_str(), eta.c_str());
  } else {
    std::snprintf(line, sizeof line, "%s%s step %lld/%lld%s %s jets/s %s\n", stage_.c_str(), epoch,
                  static_cast<long long>(done_), static_cast<long long>(total_), loss,
                  format_rate(rate_).c_str(), eta.c_str());
  }
  std::fputs(line, out_);
  std::fflush(out_);
}

void Progress::finish(const std::string& summary) {
  if (!enabled_) return;
  const double elapsed = clock_() - start_;
  if (tty_) std::fputs("\n", out_);
  char epoch[64] = "";
  if (max_epochs_ > 0)
    std::snprintf(epoch, sizeof epoch, " epoch %lld/%lld", static_cast<long long>(epoch_),
                  static_cast<long long>(max_epochs_));
  std::fprintf(out_, "%s%s done in %s: %s\n", stage_.c_str(), epoch, format_duration(elapsed).c_str(),
               summary.c_str());
  std::fflush(out_);
}

}  // namespace salt::training
