// How many threads LibTorch computes with. Measured on the 2-core CI machine
// (bench_fit): one intra-op thread (LibTorch's default there) trains the toy GN2
// 2.2x faster than two, because OpenBLAS already runs its own threads inside each
// matrix product and the loader threads need a core too. So salt-cpp keeps
// LibTorch's default and lets OMP_NUM_THREADS (the usual knob) decide otherwise.
#pragma once

namespace salt::training {

// Applies OMP_NUM_THREADS when set; returns torch's intra-op thread count.
int configure_torch_threads();

}  // namespace salt::training
