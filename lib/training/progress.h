// Training progress: a one-line bar redrawn in place on a terminal (step, epoch,
// loss, jets/s, ETA from a moving average), plain lines every `refresh_rate`
// steps otherwise (batch logs). Everything goes to stderr.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace salt::training {

class Progress {
 public:
  Progress(bool enabled, int refresh_rate, std::FILE* out = stderr);
  void start(const std::string& stage, int64_t epoch, int64_t max_epochs, int64_t total_batches);
  void update(int64_t batch, double loss, int64_t jets_in_batch);
  void finish(const std::string& summary);

  static bool stderr_is_terminal();

 private:
  void draw(int64_t batch, bool final);

  bool enabled_;
  bool tty_;
  int refresh_rate_;
  std::FILE* out_;
  std::string stage_;
  int64_t epoch_ = 0, max_epochs_ = 0, total_ = 0, done_ = 0;
  double loss_ = 0;
  double rate_ = 0;  // jets/s, exponential moving average
  double batch_rate_ = 0;  // batches/s, exponential moving average
  std::chrono::steady_clock::time_point last_, start_;
};

}  // namespace salt::training
