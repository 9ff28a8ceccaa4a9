#include "parallel/launch_env.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/env_switch.h"
#include "core/env_switches.h"
#include "core/errors.h"
#include "parallel/slurm_nodelist.h"

namespace salt::parallel {
namespace {

std::optional<int> int_var(const EnvLookup& env, const std::string& name) {
  auto v = env_text(env, name);
  if (!v) return std::nullopt;
  try {
    std::size_t used = 0;
    long value = std::stol(*v, &used);
    if (used == v->size() && value >= 0 && value < (1L << 30)) return static_cast<int>(value);
  } catch (const std::exception&) {
  }
  throw UsageError("environment variable " + name + "='" + *v + "' is not a non-negative integer");
}

int required_int(const EnvLookup& env, const std::string& name, const std::string& because) {
  auto v = int_var(env, name);
  if (!v) throw UsageError("environment variable " + name + " is not set but " + because);
  return *v;
}

// Slurm's per-node task counts look like "4", "4(x2)" or "4(x2),3": the first count.
std::optional<int> leading_count(const EnvLookup& env, const std::string& name) {
  auto v = env_text(env, name);
  if (!v) return std::nullopt;
  std::size_t digits = 0;
  while (digits < v->size() && std::isdigit(static_cast<unsigned char>((*v)[digits]))) ++digits;
  if (digits == 0 || digits > 9) throw UsageError("environment variable " + name + "='" + *v + "' does not start with a task count");
  return std::stoi(v->substr(0, digits));
}

void check_ranks(const DistEnv& d, const std::string& rank_var, const std::string& world_var,
                 const std::string& local_var) {
  if (d.world_size < 1) throw UsageError("environment variable " + world_var + " must be at least 1");
  if (d.rank >= d.world_size)
    throw UsageError("environment variable " + rank_var + "=" + std::to_string(d.rank) + " is not below " + world_var +
                     "=" + std::to_string(d.world_size));
  if (d.local_world_size < 1 || d.local_world_size > d.world_size)
    throw UsageError("the processes per node (" + std::to_string(d.local_world_size) + ") must be between 1 and " +
                     world_var + "=" + std::to_string(d.world_size));
  if (d.local_rank >= d.local_world_size)
    throw UsageError("environment variable " + local_var + "=" + std::to_string(d.local_rank) +
                     " is not below the processes per node (" + std::to_string(d.local_world_size) + ")");
}

DistEnv torchrun_env(const EnvLookup& env) {
  DistEnv d;
  d.launcher = Launcher::kTorchrun;
  d.rank = required_int(env, "RANK", "WORLD_SIZE is");
  d.world_size = required_int(env, "WORLD_SIZE", "RANK is");
  // By hand on one machine LOCAL_* may be left out: then all ranks are local.
  d.local_world_size = int_var(env, "LOCAL_WORLD_SIZE").value_or(d.world_size);
  d.local_rank = int_var(env, "LOCAL_RANK").value_or(d.rank % std::max(1, d.local_world_size));
  d.num_nodes = d.local_world_size > 0 && d.world_size % d.local_world_size == 0 ? d.world_size / d.local_world_size : 0;
  check_ranks(d, "RANK", "WORLD_SIZE", "LOCAL_RANK");
  if (d.world_size > 1) {
    const std::string why = "WORLD_SIZE=" + std::to_string(d.world_size) + ": set it to the host and port of rank 0";
    auto addr = env_text(env, "MASTER_ADDR");
    if (!addr) throw UsageError("environment variable MASTER_ADDR is not set but " + why);
    d.master_addr = *addr;
    d.master_port = required_int(env, "MASTER_PORT", why);
  }
  return d;
}

DistEnv slurm_env(const EnvLookup& env, int world) {
  DistEnv d;
  d.launcher = Launcher::kSlurm;
  d.world_size = world;
  d.rank = required_int(env, "SLURM_PROCID", "SLURM_NTASKS is");
  d.local_rank = int_var(env, "SLURM_LOCALID").value_or(0);
  auto nodes = int_var(env, "SLURM_STEP_NUM_NODES");
  if (!nodes) nodes = int_var(env, "SLURM_NNODES");
  if (!nodes) nodes = int_var(env, "SLURM_JOB_NUM_NODES");
  d.num_nodes = std::max(1, nodes.value_or(1));
  auto per_node = leading_count(env, "SLURM_STEP_TASKS_PER_NODE");
  if (!per_node) per_node = leading_count(env, "SLURM_NTASKS_PER_NODE");
  d.local_world_size = per_node.value_or(std::max(1, world / d.num_nodes));
  check_ranks(d, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID");

  if (auto addr = env_text(env, "MASTER_ADDR")) {
    d.master_addr = *addr;
  } else {
    std::string var = "SLURM_STEP_NODELIST";
    auto list = env_text(env, var);
    if (!list) list = env_text(env, var = "SLURM_JOB_NODELIST");
    if (!list) list = env_text(env, var = "SLURM_NODELIST");
    if (!list) throw UsageError("SLURM_NTASKS=" + std::to_string(world) + " but neither MASTER_ADDR nor SLURM_JOB_NODELIST is set");
    d.master_addr = first_host(*list, "environment variable " + var);
  }
  if (auto port = int_var(env, "MASTER_PORT")) {
    d.master_port = *port;
  } else {
    auto job = env_text(env, "SLURM_JOB_ID");
    if (!job) throw UsageError("neither MASTER_PORT nor SLURM_JOB_ID is set: set MASTER_PORT for the rendezvous");
    const std::string tail = job->size() > 4 ? job->substr(job->size() - 4) : *job;
    int n = 0;
    for (char c : tail)
      if (std::isdigit(static_cast<unsigned char>(c))) n = n * 10 + (c - '0');
    d.master_port = 15000 + n;  // Lightning's rule: jobs on one node get different ports
  }
  return d;
}

}  // namespace

EnvLookup process_environment() {
  return [](const char* name) -> const char* { return process_env(name); };
}

const char* launcher_name(Launcher l) {
  switch (l) {
    case Launcher::kTorchrun: return "torchrun-style variables";
    case Launcher::kSlurm: return "Slurm";
    default: return "no launcher";
  }
}

std::string DistEnv::describe() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(world_size) + " (local " + std::to_string(local_rank) +
         " of " + std::to_string(local_world_size) + ", " + launcher_name(launcher) + ", master " + master_addr + ":" +
         std::to_string(master_port) + ")";
}

DistEnv read_dist_env(const EnvLookup& env) {
  if (env_text(env, "RANK") || env_text(env, "WORLD_SIZE")) return torchrun_env(env);
  if (env_text(env, "SLURM_PROCID")) {
    auto world = int_var(env, "SLURM_STEP_NUM_TASKS");
    if (!world) world = int_var(env, "SLURM_NTASKS");
    // One task (salloc shell, batch script without srun): not a launch of ours.
    if (world && *world > 1) return slurm_env(env, *world);
  }
  return DistEnv{};
}

void check_world_size(const DistEnv& env, int devices, int num_nodes) {
  const int expected = devices * num_nodes;
  const std::string config = "trainer.devices=" + std::to_string(devices) + " x trainer.num_nodes=" +
                             std::to_string(num_nodes) + " = " + std::to_string(expected);
  if (env.world_size != expected)
    throw UsageError(std::string(launcher_name(env.launcher)) + " started " + std::to_string(env.world_size) +
                     " process(es) but " + config + ": start one process per device (e.g. srun --ntasks-per-node=" +
                     std::to_string(devices) + ") or change the config");
  if (env.launcher == Launcher::kSlurm && env.local_world_size != devices)
    throw UsageError("Slurm runs " + std::to_string(env.local_world_size) + " task(s) per node but trainer.devices=" +
                     std::to_string(devices) + ": use --ntasks-per-node=" + std::to_string(devices));
}

std::chrono::milliseconds dist_timeout(const EnvLookup& env) {
  const auto v = env_text(env, "SALT_DIST_TIMEOUT");
  const auto seconds = env_number("SALT_DIST_TIMEOUT", v ? v->c_str() : nullptr, 0.001, 1e7, "a number of seconds");
  if (!seconds) return std::chrono::seconds(kDefaultTimeoutSeconds);
  return std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
}

}  // namespace salt::parallel
