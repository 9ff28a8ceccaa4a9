// The short OpenMP spin (core/omp_spin.h): which commands start again with
// GOMP_SPINCOUNT, and what a run records of the spin in effect. The real restart
// (same pid, nothing printed twice, metadata.yaml) is checked on `salt fit` in
// tests/training/step/step_options_test.cpp.
#include "core/omp_spin.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace salt {
namespace {

EnvLookup environment(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(OmpSpin, ComputingCommandsOnSeveralCoresBesideOpenBlasThreadsStartAgain) {
  for (const char* command : {"fit", "test", "validate", "predict"})
    EXPECT_TRUE(wants_short_spin(command, environment({}), 2, true)) << command;
  EXPECT_TRUE(wants_short_spin("fit", environment({{"OMP_NUM_THREADS", "2"}}), 2, true));
  EXPECT_TRUE(wants_short_spin("fit", environment({{"GOMP_SPINCOUNT", ""}}), 2, true));  // empty is unset
  // Nothing computes, or nothing spins beside another pool.
  for (const char* command : {"toydata", "to_onnx", "--version", "shuffle"})
    EXPECT_FALSE(wants_short_spin(command, environment({}), 2, true)) << command;
  EXPECT_FALSE(wants_short_spin("fit", environment({}), 1, true));
  EXPECT_FALSE(wants_short_spin("fit", environment({{"OMP_NUM_THREADS", "1"}}), 2, true));
  EXPECT_FALSE(wants_short_spin("fit", environment({}), 2, false));
  // The user's choice wins, and a restarted process never restarts again.
  EXPECT_FALSE(wants_short_spin("fit", environment({{"GOMP_SPINCOUNT", "300000"}}), 2, true));
  EXPECT_FALSE(wants_short_spin("fit", environment({{"OMP_WAIT_POLICY", "active"}}), 2, true));
  EXPECT_FALSE(wants_short_spin("fit", environment({{kShortSpinMarker, "1"}}), 2, true));
}

TEST(OmpSpin, TheSettingSaysWhoChoseIt) {
  auto ours = spin_setting(environment({{"GOMP_SPINCOUNT", kShortSpinCount}, {kShortSpinMarker, "1"}}));
  EXPECT_EQ(ours.value, "10000");
  EXPECT_FALSE(ours.from_environment);
  auto users = spin_setting(environment({{"GOMP_SPINCOUNT", "500"}}));
  EXPECT_EQ(users.value, "500");
  EXPECT_TRUE(users.from_environment);
  auto policy = spin_setting(environment({{"OMP_WAIT_POLICY", "passive"}}));
  EXPECT_EQ(policy.value, "OMP_WAIT_POLICY=passive");
  EXPECT_TRUE(policy.from_environment);
  auto nobody = spin_setting(environment({}));
  EXPECT_EQ(nobody.value, "libgomp's own (300000)");
  EXPECT_FALSE(nobody.from_environment);
}

TEST(OmpSpin, OpenBlasTimeoutSaysWhoChoseIt) {
  // The restart's marker: "2" when salt set the timeout, "1" when the user had.
  auto ours = blas_timeout_setting(environment({{"OPENBLAS_THREAD_TIMEOUT", kShortBlasTimeout}, {kShortSpinMarker, "2"}}));
  EXPECT_EQ(ours.value, "4");
  EXPECT_FALSE(ours.from_environment);
  // Before: a user's own 4 beside the marker was recorded as salt's.
  auto users_four = blas_timeout_setting(environment({{"OPENBLAS_THREAD_TIMEOUT", "4"}, {kShortSpinMarker, "1"}}));
  EXPECT_TRUE(users_four.from_environment);
  auto users = blas_timeout_setting(environment({{"OPENBLAS_THREAD_TIMEOUT", "20"}, {kShortSpinMarker, "1"}}));
  EXPECT_EQ(users.value, "20");
  EXPECT_TRUE(users.from_environment);
  auto without_restart = blas_timeout_setting(environment({{"OPENBLAS_THREAD_TIMEOUT", "4"}}));
  EXPECT_TRUE(without_restart.from_environment);
  auto nobody = blas_timeout_setting(environment({}));
  EXPECT_EQ(nobody.value, "OpenBLAS's own (28)");
  EXPECT_FALSE(nobody.from_environment);
}

}  // namespace
}  // namespace salt
