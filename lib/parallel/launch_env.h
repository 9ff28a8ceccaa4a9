// Who this process is in a data-parallel run, read from the variables its launcher
// set. Two families are understood, the first one present wins:
//
// - torchrun-style (torchrun, `salt fit --trainer.devices N` itself, or by hand):
//   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
// - Slurm (srun): SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS (SLURM_STEP_NUM_TASKS
//   inside a job step), SLURM_NTASKS_PER_NODE, SLURM_NNODES, the first host of
//   SLURM_STEP_NODELIST / SLURM_JOB_NODELIST as master, MASTER_PORT or
//   15000 + the last 4 digits of SLURM_JOB_ID (as Lightning).
//
// Slurm variables that describe a single task (an interactive shell, a batch script
// without srun) are ignored, so `salt fit --trainer.devices N` there launches its
// own N processes.
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "core/env_switch.h"

namespace salt::parallel {

// The one lookup type of salt-cpp (core/env_switch.h): a variable's value, null
// when unset; env_text reads one as text, empty counting as unset.
using salt::EnvLookup;

// This process's environment (core/env_switches.h's process_env).
EnvLookup process_environment();

enum class Launcher { kNone, kTorchrun, kSlurm };

struct DistEnv {
  Launcher launcher = Launcher::kNone;
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;  // processes on this node
  int num_nodes = 1;         // 0: not known (torchrun-style without LOCAL_WORLD_SIZE)
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;

  bool distributed() const { return world_size > 1; }
  // "rank 1 of 4 (local 1 of 4, Slurm, master node01:29500)"
  std::string describe() const;
};

// Reads the launcher's variables; UsageError naming the variable when one is
// malformed or they contradict each other (rank >= world size, ...).
DistEnv read_dist_env(const EnvLookup& env);

// One clear line when the processes launched do not match the config:
// world size != devices x num_nodes, or processes per node != devices.
void check_world_size(const DistEnv& env, int devices, int num_nodes);

// Whether some launcher already set this process up (then `salt fit` must not
// start processes itself).
inline bool launched_externally(const DistEnv& env) { return env.launcher != Launcher::kNone; }

// Store connection and collective timeout: SALT_DIST_TIMEOUT seconds, default 60.
inline constexpr int kDefaultTimeoutSeconds = 60;
std::chrono::milliseconds dist_timeout(const EnvLookup& env);

// Every data-parallel switch (SALT_DIST_TIMEOUT, SALT_DIST_OVERLAP,
// SALT_DIST_BUCKET_MB) read once, so that `salt fit --trainer.devices N` refuses a
// bad one in one line before its workers start, not once per worker. Defined
// beside the gradient switches (grad_sync.cpp).
void check_data_parallel_switches(const EnvLookup& env);

const char* launcher_name(Launcher l);

}  // namespace salt::parallel
