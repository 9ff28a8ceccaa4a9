// A data-parallel process group: a TCPStore rendezvous (rank 0 serves it) plus a
// collective backend (NCCL for CUDA tensors when the LibTorch build has it, else
// Gloo). Every call has a timeout; a failure (a peer died, a peer never answered)
// becomes one InputError line naming the operation and this rank. The c10d
// headers stay in the .cpp: this header is cheap to include.
#pragma once
#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>

#include "parallel/launch_env.h"

namespace salt::parallel {

struct GroupOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(kDefaultTimeoutSeconds)};
  std::string gloo_interface;  // GLOO_SOCKET_IFNAME: the network interface Gloo binds to
  // SALT_DIST_BACKEND: "" (NCCL for CUDA tensors where LibTorch has it, else Gloo),
  // "nccl" or "gloo". Gloo stages CUDA tensors through host memory; it is what lets
  // several processes share one card, which NCCL refuses (`trainer.devices: [0, 0]`).
  std::string backend;

  GroupOptions& set_timeout(std::chrono::milliseconds t) { timeout = t; return *this; }
  GroupOptions& set_gloo_interface(std::string i) { gloo_interface = std::move(i); return *this; }
  GroupOptions& set_backend(std::string b) { backend = std::move(b); return *this; }
  // SALT_DIST_TIMEOUT, GLOO_SOCKET_IFNAME and SALT_DIST_BACKEND from the environment
  // (a SALT_DIST_BACKEND other than nccl or gloo is a UsageError).
  static GroupOptions from_environment(const EnvLookup& env);
};

// An all-reduce in flight; wait() blocks until its result is in the tensor.
class PendingReduce {
 public:
  struct Impl;
  PendingReduce() = default;
  explicit PendingReduce(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  void wait();
  bool valid() const { return impl_ != nullptr; }

 private:
  std::shared_ptr<Impl> impl_;
};

class ProcessGroup {
 public:
  // Joins the run described by `env` (world_size > 1); collectives run on `device`'s
  // kind of tensor. InputError when the others do not show up within the timeout.
  static std::unique_ptr<ProcessGroup> connect(const DistEnv& env, const torch::Device& device, GroupOptions options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return env_.rank; }
  int size() const { return env_.world_size; }
  const DistEnv& env() const { return env_; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  std::string backend_name() const;

  // Sums `t` (contiguous) over all ranks, in place.
  PendingReduce allreduce_sum_async(const torch::Tensor& t);
  void allreduce_sum(const torch::Tensor& t) { allreduce_sum_async(t).wait(); }
  // Copies rank `root`'s `t` into everyone's `t` (contiguous, same shape everywhere).
  void broadcast(const torch::Tensor& t, int root);
  void barrier();

  // Small values through the rendezvous store (rank 0 tells the others things).
  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key);  // waits for the key, up to the timeout

 private:
  struct Impl;
  ProcessGroup(DistEnv env, GroupOptions options, std::unique_ptr<Impl> impl);
  [[noreturn]] void fail(const std::string& what, const std::exception& e) const;
  friend class PendingReduce;

  DistEnv env_;
  GroupOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace salt::parallel
