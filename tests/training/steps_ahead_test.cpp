// The run-ahead limit's switch (SALT_MAX_STEPS_AHEAD) and its CPU behaviour;
// tests/gpu holds it to waiting on a card.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/errors.h"
#include "training/steps_ahead.h"

using salt::cuda::StepsAhead;

namespace {

struct EnvVar {
  explicit EnvVar(const char* value) {
    if (value)
      setenv("SALT_MAX_STEPS_AHEAD", value, 1);
    else
      unsetenv("SALT_MAX_STEPS_AHEAD");
  }
  ~EnvVar() { unsetenv("SALT_MAX_STEPS_AHEAD"); }
};

}  // namespace

TEST(StepsAhead, DepthComesFromTheEnvironment) {
  {
    EnvVar unset(nullptr);
    EXPECT_EQ(salt::cuda::max_steps_ahead_from_env(), 0);
  }
  {
    EnvVar two("2");
    EXPECT_EQ(salt::cuda::max_steps_ahead_from_env(), 2);
  }
  for (const char* bad : {"two", "-1", "2.5", "1001"}) {
    EnvVar v(bad);
    EXPECT_THROW(salt::cuda::max_steps_ahead_from_env(), salt::UsageError) << bad;
  }
}

// Without a card (device -1, as fit passes for the CPU) it counts steps and never waits.
TEST(StepsAhead, OnTheCpuItOnlyCounts) {
  StepsAhead ahead(1);
  for (int i = 0; i < 3; ++i) ahead.step_issued(-1);
  EXPECT_EQ(ahead.steps(), 3);
  EXPECT_EQ(ahead.waits(), 0);
  EXPECT_EQ(ahead.depth(), 1);
}
