// How long LibTorch's idle OpenMP threads spin before they sleep. libgomp keeps each
// thread of a finished parallel region spinning for GOMP_SPINCOUNT rounds (300,000
// by default) in case more work comes. Debian's LibTorch multiplies its matrices in
// OpenBLAS built with its own pthreads: while OpenBLAS's threads compute a product,
// libgomp's spin on the same cores, and the product waits for them. salt's GN2.yaml
// fit on the 2-core VM (batch 1000, 2 threads, `bench/fit_threads.sh`): fp32 ~1.3x and
// bf16-mixed ~1.4x faster with GOMP_SPINCOUNT=10000 than with libgomp's default
// (docs/performance.md, "Threads").
//
// libgomp reads the variable once, when it is loaded, before main: setting it from
// main is too late, and a preinit function's setenv is undone when libc starts. So
// a computing command (fit, test, validate, predict) that would meet the clash
// replaces itself, at its first line, with the same command (same pid, arguments
// and environment) plus GOMP_SPINCOUNT: once, about a second of LibTorch's start-up.
// A user's GOMP_SPINCOUNT or OMP_WAIT_POLICY always wins. Torch-free.
#pragma once
#include <string>

#include "core/env_switch.h"

namespace salt {

// The spin salt-cpp sets: idle threads wait ~10 us, then sleep.
inline constexpr const char* kShortSpinCount = "10000";
// And OpenBLAS's threads, which yield for 2^28 cycles before they sleep, after 2^4
// (OPENBLAS_THREAD_TIMEOUT, read when OpenBLAS loads; docs/performance.md, "The
// OpenMP spin").
inline constexpr const char* kShortBlasTimeout = "4";
// Set beside it ("1"; "2" when salt set OPENBLAS_THREAD_TIMEOUT too), so that the
// run can tell its own settings from a user's.
inline constexpr const char* kShortSpinMarker = "SALT_SET_GOMP_SPINCOUNT";

// Whether `command` should start again with GOMP_SPINCOUNT=kShortSpinCount: a
// computing command, more than one core to compute on, OMP_NUM_THREADS not 1,
// neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY set, and a BLAS with threads of its own.
bool wants_short_spin(const std::string& command, const EnvLookup& env, int cores, bool blas_own_threads);

// Whether the BLAS LibTorch calls is OpenBLAS running its own pthreads
// (openblas_get_parallel() == 1), not OpenMP's threads or none.
bool blas_runs_own_threads();

// At the start of main: when wants_short_spin for argv[1] in this process, sets
// GOMP_SPINCOUNT, OPENBLAS_THREAD_TIMEOUT (unless the user did) and the marker and
// executes /proc/self/exe with argv. Returns when
// nothing is to be done, or when the exec failed (the run goes on with libgomp's spin).
void restart_with_short_spin_if_needed(int argc, char** argv);

// The spin in effect, for the log and metadata.yaml: its value and whether the user
// set it (else salt-cpp did, or nobody: "libgomp's own (300000)").
struct SpinSetting {
  std::string value;
  bool from_environment = false;
};
SpinSetting spin_setting(const EnvLookup& env);
// OPENBLAS_THREAD_TIMEOUT in effect, the same way ("OpenBLAS's own (28)" when unset).
SpinSetting blas_timeout_setting(const EnvLookup& env);

}  // namespace salt
