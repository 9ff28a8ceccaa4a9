#include "training/progress.h"

#include <unistd.h>

#include <cmath>

namespace salt::training {
namespace {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

std::string format_rate(double per_second) {
  char buf[32];
  if (per_second >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", per_second / 1e6);
  else if (per_second >= 1e3) std::snprintf(buf, sizeof buf, "%.1fk", per_second / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", per_second);
  return buf;
}

}  // namespace

Progress::Progress(bool enabled, int refresh_rate, std::FILE* out)
    : enabled_(enabled), tty_(isatty(fileno(out)) != 0), refresh_rate_(refresh_rate > 0 ? refresh_rate : 1), out_(out) {}

bool Progress::stderr_is_terminal() { return isatty(fileno(stderr)) != 0; }

void Progress::start(const std::string& stage, int64_t epoch, int64_t max_epochs, int64_t total_batches) {
  stage_ = stage;
  epoch_ = epoch;
  max_epochs_ = max_epochs;
  total_ = total_batches;
  done_ = 0;
  rate_ = batch_rate_ = 0;
  last_ = start_ = std::chrono::steady_clock::now();
}

void Progress::update(int64_t batch, double loss, int64_t jets_in_batch) {
  auto now = std::chrono::steady_clock::now();
  double dt = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  done_ = batch + 1;
  loss_ = loss;
  if (dt > 0) {
    // Moving averages: the first batches (warm-up, page cache) should not dominate the ETA.
    double a = rate_ == 0 ? 1.0 : 0.1;
    rate_ = (1 - a) * rate_ + a * (static_cast<double>(jets_in_batch) / dt);
    batch_rate_ = (1 - a) * batch_rate_ + a * (1.0 / dt);
  }
  if (!enabled_) return;
  if (done_ % refresh_rate_ == 0 || done_ == total_) draw(batch, false);
}

void Progress::draw(int64_t, bool) {
  double eta = batch_rate_ > 0 ? static_cast<double>(total_ - done_) / batch_rate_ : NAN;
  char line[256];
  if (tty_) {
    const int width = 24;
    int filled = total_ > 0 ? static_cast<int>(width * done_ / total_) : 0;
    std::string bar(static_cast<std::size_t>(filled), '=');
    bar.resize(width, ' ');
    std::snprintf(line, sizeof line, "\r%s epoch %lld/%lld [%s] %lld/%lld loss %.4f %s jets/s ETA %s ", stage_.c_str(),
                  static_cast<long long>(epoch_), static_cast<long long>(max_epochs_), bar.c_str(),
                  static_cast<long long>(done_), static_cast<long long>(total_), loss_, format_rate(rate_).c_str(),
                  format_duration(eta).c_str());
  } else {
    std::snprintf(line, sizeof line, "%s epoch %lld/%lld step %lld/%lld loss %.4f %s jets/s ETA %s\n", stage_.c_str(),
                  static_cast<long long>(epoch_), static_cast<long long>(max_epochs_), static_cast<long long>(done_),
                  static_cast<long long>(total_), loss_, format_rate(rate_).c_str(), format_duration(eta).c_str());
  }
  std::fputs(line, out_);
  std::fflush(out_);
}

void Progress::finish(const std::string& summary) {
  if (!enabled_) return;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (tty_) std::fputs("\n", out_);
  std::fprintf(out_, "%s epoch %lld/%lld done in %s: %s\n", stage_.c_str(), static_cast<long long>(epoch_),
               static_cast<long long>(max_epochs_), format_duration(elapsed).c_str(), summary.c_str());
  std::fflush(out_);
}

}  // namespace salt::training
