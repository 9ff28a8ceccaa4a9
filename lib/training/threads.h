// How many threads LibTorch computes with. Measured on the 2-core CI machine
// (bench_fit): one intra-op thread (LibTorch's default there) trains the toy GN2
// 2.2x faster than two, because OpenBLAS already runs its own threads inside each
// matrix product and the loader threads need a core too. So on the CPU salt-cpp
// keeps LibTorch's default and lets OMP_NUM_THREADS (the usual knob) decide
// otherwise.
//
// A run on a GPU computes with one thread unless OMP_NUM_THREADS says otherwise:
// the card does the maths, and what the host computes there is small tensors (the
// batch's host copies, models/host_twins.h; the loader's conversions), for which a
// parallel region costs more than it saves once the loader's workers keep the
// cores busy (bench/host_ops_threads.py on the 2-core machine with both cores
// busy: 96 ms for one step's host-copy operations on 2 threads against 2.5 ms on
// one). PyTorch's DataLoader runs its workers with one thread for the same reason.
#pragma once

#include <optional>

#include "training/trainer_config.h"

namespace salt::training {

// The cores this process may run on (sched_getaffinity: taskset, cpusets and
// Slurm's binding count), at least 1.
int usable_cores();

// OMP_NUM_THREADS as salt-cpp takes it: unset or empty -> nullopt; a whole number
// from 1 to kMaxThreadsPerCore x `cores` -> that number; anything else (a typo, 0,
// negative, 100000) a UsageError naming the variable and the range. Before, the
// value went straight to LibTorch: 100000 started tens of thousands of threads,
// deaf to SIGTERM for minutes, and a typo was a raw std::stoi exception.
constexpr int kMaxThreadsPerCore = 4;
std::optional<int> threads_from_env(const char* value, int cores);

// The same for the process's OMP_NUM_THREADS and usable_cores(): called before
// anything is started or written, so that a bad value is refused first.
std::optional<int> threads_from_env();

// Applies OMP_NUM_THREADS when set (threads_from_env), else one thread when the
// trainer config runs on a GPU (select_device); returns torch's intra-op thread count.
int configure_torch_threads(const TrainerConfig& trainer);

}  // namespace salt::training
