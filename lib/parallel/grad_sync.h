// Gradient averaging for data-parallel training, as DDP does it: gradients are
// packed into flat buckets of ~25 MB (parameters in reverse order, since backward
// produces the last layers' gradients first); a hook on every parameter copies its
// gradient into its bucket the moment autograd computes it, and a full bucket's
// all-reduce starts at once, on the backend's threads, while backward goes on.
// Buckets are always launched in index order (a ready bucket waits for the ones
// before it), so every rank issues the same sequence of collectives. finish()
// launches whatever the hooks did not (parameters without a gradient this step),
// waits, and writes sum / world_size back into every .grad.
//
// With gradient accumulation only the backward that ends an optimizer step is
// synchronised (begin_backward(sync=false) for the others): the hook then reduces
// the accumulated gradient (.grad so far + this micro-batch's).
//
// overlap = false skips the hooks: after backward, the same buckets are reduced one
// after another (SALT_DIST_OVERLAP=0; bench_dist compares the two).
#pragma once
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "parallel/launch_env.h"

namespace salt::parallel {

class ProcessGroup;

struct GradSyncOptions {
  int64_t bucket_bytes = 25LL << 20;
  bool overlap = true;

  GradSyncOptions& set_bucket_bytes(int64_t b) { bucket_bytes = b; return *this; }
  GradSyncOptions& set_overlap(bool o) { overlap = o; return *this; }
  // SALT_DIST_OVERLAP=0 turns the hooks off; SALT_DIST_BUCKET_MB sets the bucket size.
  static GradSyncOptions from_environment(const EnvLookup& env);
};

class GradSync {
 public:
  GradSync(ProcessGroup& group, std::vector<torch::Tensor> parameters, GradSyncOptions options = {});
  ~GradSync();  // removes the hooks
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  // Before each micro-batch's backward; `sync`: this backward ends an optimizer step.
  void begin_backward(bool sync);
  // After a backward begun with sync = true: every .grad is the mean over ranks.
  void finish();

  struct Stats {
    int64_t steps = 0;
    int64_t buckets_launched_in_backward = 0;  // started by hooks, overlapping backward
    int64_t buckets_launched_after = 0;        // started by finish()
    double wait_seconds = 0;                   // time finish() spent waiting for reductions
  };
  const Stats& stats() const { return stats_; }
  std::size_t num_buckets() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  Stats stats_;
};

// Copies rank 0's parameters and buffers into every rank's module (one broadcast
// per dtype), so all ranks start from the same weights.
void broadcast_module(ProcessGroup& group, torch::nn::Module& module);

}  // namespace salt::parallel
