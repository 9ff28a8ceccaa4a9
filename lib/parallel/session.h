// What the fit loop needs from a data-parallel run besides gradient averaging:
// who decides (rank 0 names the run directory, runs the git checks, writes every
// file), agreement at step boundaries (a NaN, a stop signal or a requeue request
// on any rank stops every rank at the same step) and sums of validation metrics.
//
// A Session exists only when world_size > 1; single-process fits have none and run
// exactly as before.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "parallel/grad_sync.h"
#include "parallel/launch_env.h"
#include "parallel/process_group.h"

namespace salt::parallel {

class Session {
 public:
  // The launcher's environment, checked against the config (devices x num_nodes).
  // nullptr for a single process; UsageError when the config asks for several
  // processes but no launcher started them (fit called in-process).
  static DistEnv environment_for(int devices, int num_nodes, const EnvLookup& env = process_environment());
  // Joins the run (the rendezvous, then the backend for `device`).
  static std::unique_ptr<Session> join(const DistEnv& env, const torch::Device& device,
                                       const EnvLookup& lookup = process_environment());

  int rank() const { return group_->rank(); }
  int size() const { return group_->size(); }
  bool is_main() const { return rank() == 0; }
  ProcessGroup& group() { return *group_; }

  // Rank 0 runs `decide` and every rank gets its result. If it throws there, rank 0
  // rethrows and the others throw InputError("rank 0 could not <what>: <message>").
  std::string from_rank0(const std::string& key, const std::string& what, const std::function<std::string()>& decide);

  // One all-reduce per optimizer step: whether any rank saw a non-finite loss
  // (the lowest such rank), got a stop signal or a requeue request.
  struct StepFlags {
    int nan_rank = -1;  // -1: none
    int stop_signal = 0;
    bool requeue = false;
  };
  StepFlags agree(bool local_nan, int local_stop_signal, bool local_requeue);

  // What must be the same on every rank before training (the model, batch size, data
  // sizes, precision, ...), as (name, value) in one order: every rank's list is
  // shared through the store and compared with rank 0's. Where one differs, every
  // rank throws the same UsageError naming the first rank, setting and both values
  // (before: Gloo aborted the broadcast of mismatched weights).
  void require_same(const std::vector<std::pair<std::string, std::string>>& settings);

  // Element-wise sums over ranks (as float64 on the CPU).
  std::vector<double> sum(const std::vector<double>& values);

  // Gradient averaging for `parameters` (after broadcast_module).
  std::unique_ptr<GradSync> gradient_sync(std::vector<torch::Tensor> parameters);

 private:
  explicit Session(std::unique_ptr<ProcessGroup> group, EnvLookup lookup)
      : group_(std::move(group)), lookup_(std::move(lookup)) {}
  std::unique_ptr<ProcessGroup> group_;
  EnvLookup lookup_;
  torch::Device reduce_device_{torch::kCPU};
};

}  // namespace salt::parallel
