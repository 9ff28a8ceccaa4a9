#include "core/omp_spin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/env_switches.h"
#include "core/cpu_budget.h"
#include "core/install_paths.h"

namespace salt {

namespace {

bool set(const EnvLookup& env, const char* name) {
  const char* value = env(name);
  return value && *value;
}

bool computes(const std::string& command) {
  return command == "fit" || command == "test" || command == "validate" || command == "predict";
}

}  // namespace

bool wants_short_spin(const std::string& command, const EnvLookup& env, int cores, bool blas_own_threads) {
  if (!computes(command) || cores < 2 || !blas_own_threads) return false;
  if (set(env, "GOMP_SPINCOUNT") || set(env, "OMP_WAIT_POLICY") || set(env, kShortSpinMarker)) return false;
  const char* threads = env("OMP_NUM_THREADS");
  return !(threads && std::strcmp(threads, "1") == 0);  // a bad value is refused later, in one line
}

bool blas_runs_own_threads() {
  using GetParallel = int (*)();
  auto get_parallel = reinterpret_cast<GetParallel>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
  return get_parallel && get_parallel() == 1;
}

namespace {

// Started through the dynamic loader (`ld-linux-x86-64.so.2 salt fit ...`, as some
// batch wrappers and profilers do), /proc/self/exe is the loader: restarting it with
// salt's arguments made it look for a program named "fit" (exit 127). Then the
// loader is run again with salt's path, which the loader left in argv[0].
// Through another program (valgrind: /proc/self/exe is its tool, which refuses to
// be run directly) salt cannot restart: it says so and runs on with libgomp's spin.
void restart(int argc, char** argv) {
  const auto launch = how_started();
  if (launch == Launch::kItself) {
    execv("/proc/self/exe", argv);
    return;
  }
  if (launch == Launch::kOther) {
    std::fprintf(stderr,
                 "warning: salt runs inside another program (valgrind, an emulator) and cannot restart itself with "
                 "GOMP_SPINCOUNT=%s: idle OpenMP threads spin at libgomp's own count; set GOMP_SPINCOUNT (%s is "
                 "salt's choice) to skip the restart\n",
                 kShortSpinCount, kShortSpinCount);
    return;
  }
  std::vector<char*> with_loader{const_cast<char*>("/proc/self/exe")};
  with_loader.insert(with_loader.end(), argv, argv + argc);
  with_loader.push_back(nullptr);
  execv("/proc/self/exe", with_loader.data());
}

}  // namespace

void restart_with_short_spin_if_needed(int argc, char** argv) {
  if (argc < 2 || !computes(argv[1])) return;  // the machine is looked at only for these
  const EnvLookup env = [](const char* name) -> const char* { return process_env(name); };
  if (!wants_short_spin(argv[1], env, affinity_cores(), blas_runs_own_threads())) return;
  const bool blas_timeout_set = set(env, "OPENBLAS_THREAD_TIMEOUT");
  // The marker says what salt set: "1" the spin count, "2" the BLAS timeout too, so
  // that a user's own OPENBLAS_THREAD_TIMEOUT=4 is recorded as the user's.
  if (setenv("GOMP_SPINCOUNT", kShortSpinCount, 1) != 0 ||
      setenv(kShortSpinMarker, blas_timeout_set ? "1" : "2", 1) != 0 ||
      (!blas_timeout_set && setenv("OPENBLAS_THREAD_TIMEOUT", kShortBlasTimeout, 1) != 0))
    return;
  restart(argc, argv);
  // Not restarted: run on with the libraries' own waits, as metadata.yaml then says.
  unsetenv("GOMP_SPINCOUNT");
  unsetenv(kShortSpinMarker);
  if (!blas_timeout_set) unsetenv("OPENBLAS_THREAD_TIMEOUT");
}

SpinSetting spin_setting(const EnvLookup& env) {
  if (set(env, "GOMP_SPINCOUNT")) return {env("GOMP_SPINCOUNT"), !set(env, kShortSpinMarker)};
  if (set(env, "OMP_WAIT_POLICY")) return {std::string("OMP_WAIT_POLICY=") + env("OMP_WAIT_POLICY"), true};
  return {"libgomp's own (300000)", false};
}

SpinSetting blas_timeout_setting(const EnvLookup& env) {
  if (!set(env, "OPENBLAS_THREAD_TIMEOUT")) return {"OpenBLAS's own (28)", false};
  // salt-cpp sets it only beside its marker, and only where the user had not.
  const bool ours = set(env, kShortSpinMarker) && std::strcmp(env(kShortSpinMarker), "2") == 0 &&
                    std::strcmp(env("OPENBLAS_THREAD_TIMEOUT"), kShortBlasTimeout) == 0;
  return {env("OPENBLAS_THREAD_TIMEOUT"), !ours};
}

}  // namespace salt
