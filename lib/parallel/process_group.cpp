#include "parallel/process_group.h"

#include "core/env_switch.h"
#include "core/errors.h"
#include "parallel/backends.h"
#include "parallel/c10d_compat.h"
#include "parallel/free_port.h"

namespace salt::parallel {
namespace {

// c10d's messages carry backtraces and source paths; users get the first line.
std::string first_line(const std::exception& e) {
  std::string text;
  if (auto* c10 = dynamic_cast<const c10::Error*>(&e)) text = c10->what_without_backtrace();
  else text = e.what();
  auto nl = text.find('\n');
  if (nl != std::string::npos) text.resize(nl);
  return text;
}

std::string seconds(std::chrono::milliseconds t) {
  auto s = std::to_string(static_cast<double>(t.count()) / 1000.0);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

bool is_loopback(const std::string& host) { return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1"; }

// The refusals that need no peer: a backend that this build or this run cannot have.
void require_backend(const GroupOptions& options, const torch::Device& device) {
  const bool nccl = SALT_HAVE_NCCL && device.is_cuda();
  if (options.backend == "nccl" && !nccl)
    throw UsageError(std::string("SALT_DIST_BACKEND=nccl but ") +
                     (device.is_cuda() ? "this LibTorch build has no NCCL" : "the run trains on the CPU") +
                     ": leave SALT_DIST_BACKEND unset or use gloo");
  if (SALT_HAVE_GLOO) return;
  if (options.backend == "gloo")
    throw UsageError(no_gloo_message("SALT_DIST_BACKEND=gloo (which trainer.devices [0, 0] sets to share a card)"));
  if (!nccl)
    throw UsageError(no_gloo_message(device.is_cuda() ? "data-parallel training with a LibTorch that has no NCCL"
                                                      : "data-parallel training on the CPU"));
}

}  // namespace

BuiltBackends built_backends() { return {SALT_HAVE_GLOO != 0, SALT_HAVE_NCCL != 0}; }

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;  // salt's own keys, under "salt/"
  c10::intrusive_ptr<compat::CollectiveBackend> backend;
  bool stage_through_host = false;  // CUDA tensors but no NCCL: reduce copies on the CPU
  torch::Device device{torch::kCPU};  // where the backend wants its tensors
  std::string name;
};

struct PendingReduce::Impl {
  const ProcessGroup* group = nullptr;
  c10::intrusive_ptr<compat::Work> work;
  torch::Tensor target, staged;  // staged: the host copy when staging
};

GroupOptions GroupOptions::from_environment(const EnvLookup& env) {
  GroupOptions o;
  o.set_timeout(dist_timeout(env));
  if (auto i = env_text(env, "GLOO_SOCKET_IFNAME")) o.set_gloo_interface(*i);
  auto backend = env_text(env, "SALT_DIST_BACKEND");
  o.set_backend(env_choice("SALT_DIST_BACKEND", backend ? backend->c_str() : nullptr,
                           {{"nccl", "NCCL, one process per card"},
                            {"gloo", "Gloo, CUDA tensors staged through host memory"}}));
  return o;
}

ProcessGroup::ProcessGroup(DistEnv env, GroupOptions options, std::unique_ptr<Impl> impl)
    : env_(std::move(env)), options_(options), impl_(std::move(impl)) {}

ProcessGroup::~ProcessGroup() = default;

std::string ProcessGroup::backend_name() const { return impl_->name; }

void ProcessGroup::fail(const std::string& what, const std::exception& e) const {
  throw InputError(what + " failed on rank " + std::to_string(rank()) + " of " + std::to_string(size()) + ": " +
                   first_line(e) + " (another process of the run stopped, or did not answer within " +
                   seconds(options_.timeout) + " s; see SALT_DIST_TIMEOUT)");
}

std::unique_ptr<ProcessGroup> ProcessGroup::connect(const DistEnv& env, const torch::Device& device, GroupOptions options) {
  require_backend(options, device);
  auto impl = std::make_unique<Impl>();
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  // Said before c10d's own log lines about the failed bind, which came first.
  if (env.rank == 0 && !port_is_free(env.master_port))
    throw InputError("rank 0 cannot serve the run's rendezvous at " + where + ": port " +
                     std::to_string(env.master_port) + " is in use by another process (another run?); choose another "
                     "MASTER_PORT");
  try {
    auto tcp = compat::make_tcp_store(env.master_addr, env.master_port, env.rank == 0, env.world_size, options.timeout);
    impl->store = compat::prefixed("salt", tcp);
    auto backend_store = compat::prefixed("c10d", tcp);
#if SALT_HAVE_NCCL
    if (device.is_cuda() && options.backend != "gloo") {
      impl->backend = compat::make_nccl(backend_store, env.rank, env.world_size, options.timeout);
      impl->name = "nccl";
      impl->device = device;
    }
#endif
#if SALT_HAVE_GLOO
    if (!impl->backend) {  // require_backend leaves no other case without Gloo
      impl->backend = compat::make_gloo(backend_store, env.rank, env.world_size, options.timeout, options.gloo_interface,
                                        is_loopback(env.master_addr));
      impl->name = "gloo";
      impl->stage_through_host = device.is_cuda();
    }
#endif
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    std::string hint = env.launcher == Launcher::kSlurm ? " (under Slurm, start one process per task with srun)" : "";
    throw InputError("rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size) +
                     " could not join the run at " + where + " within " + seconds(options.timeout) + " s: " +
                     first_line(e) + hint);
  }
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(env, options, std::move(impl)));
}

PendingReduce ProcessGroup::allreduce_sum_async(const torch::Tensor& t) {
  auto p = std::make_shared<PendingReduce::Impl>();
  p->group = this;
  p->target = t;
  try {
    std::vector<at::Tensor> tensors{t};
    if (impl_->stage_through_host) {
      p->staged = t.to(torch::kCPU);
      tensors = {p->staged};
    }
    p->work = impl_->backend->allreduce(tensors, compat::sum_options(options_.timeout));
  } catch (const std::exception& e) {
    fail("all-reduce", e);
  }
  return PendingReduce(p);
}

void PendingReduce::wait() {
  if (!impl_) return;
  auto p = std::move(impl_);
  try {
    p->work->wait(p->group->timeout());
  } catch (const std::exception& e) {
    p->group->fail("all-reduce", e);
  }
  if (p->staged.defined()) p->target.copy_(p->staged);
}

void ProcessGroup::broadcast(const torch::Tensor& t, int root) {
  try {
    std::vector<at::Tensor> tensors{impl_->stage_through_host ? t.to(torch::kCPU) : t};
    impl_->backend->broadcast(tensors, compat::broadcast_options(root, options_.timeout))->wait(options_.timeout);
    if (impl_->stage_through_host) t.copy_(tensors[0]);
  } catch (const std::exception& e) {
    fail("broadcast", e);
  }
}

void ProcessGroup::barrier() {
  // An all-reduce of one number: the same on every backend (NCCL's barrier needs device ids).
  allreduce_sum(torch::zeros({1}, torch::TensorOptions().device(impl_->device)));
}

void ProcessGroup::set(const std::string& key, const std::string& value) {
  try {
    impl_->store->set(key, compat::to_bytes(value));
  } catch (const std::exception& e) {
    fail("store set '" + key + "'", e);
  }
}

std::string ProcessGroup::get(const std::string& key) {
  try {
    return compat::from_bytes(impl_->store->get(key));
  } catch (const std::exception& e) {
    fail("waiting for '" + key + "' from rank 0", e);
  }
}

}  // namespace salt::parallel
