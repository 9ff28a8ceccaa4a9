// How many threads LibTorch computes with: OMP_NUM_THREADS when set, else the
// rule of core/cpu_budget.h (choose_threads): on the CPU every core this process
// may use (its affinity mask, its cgroup's quota), shared among the ranks on the
// node; on a GPU one thread. LibTorch 1.13's own default was one thread on some
// machines, and LibTorch 2's is the machine's cores, whatever the mask, quota or
// ranks. Measured on the 2-core machine (AMD EPYC, no AVX-512) at 2 compute
// threads against 1: GN2 at batch 1000 ~15 % faster in fp32 and in bf16-mixed,
// with 2 loader workers as with none (docs/performance.md, "Threads").
//
// A run on a GPU computes with one thread unless OMP_NUM_THREADS says otherwise:
// the card does the maths, and what the host computes there is small tensors (the
// batch's host copies, models/packing/host_twins.h; the loader's conversions), for which a
// parallel region costs more than it saves once the loader's workers keep the
// cores busy (bench/host_ops_threads.py on the 2-core machine with both cores
// busy: 96 ms for one step's host-copy operations on 2 threads against 2.5 ms on
// one). PyTorch's DataLoader runs its workers with one thread for the same reason.
#pragma once

#include <optional>

#include "core/cpu_budget.h"
#include "training/step/step_options.h"
#include "training/trainer_config.h"

namespace salt::training {

// OMP_NUM_THREADS's value (null when unset) as salt-cpp takes it (the env_switch.h
// rule; step_options.cpp reads the variable): unset or empty -> nullopt; a whole
// number from 1 to kMaxThreadsPerCore x `cores` -> that number; anything else (a
// typo, 0, negative, 100000) a UsageError naming the variable and the range. Before,
// the value went straight to LibTorch: 100000 started tens of thousands of threads,
// deaf to SIGTERM for minutes, and a typo was a raw std::stoi exception.
constexpr int kMaxThreadsPerCore = 4;
std::optional<int> threads_from_env(const char* value, int cores);

// Applies `threads` when it came from the environment (StepOptions::threads, read
// from OMP_NUM_THREADS), else choose_threads for this machine, the node's ranks (the
// launcher's LOCAL_WORLD_SIZE or Slurm's tasks per node) and the trainer's device;
// returns torch's intra-op thread count and why.
ThreadChoice configure_torch_threads(const TrainerConfig& trainer, const StepOption<int>& threads);

}  // namespace salt::training
