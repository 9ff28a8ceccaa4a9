// The run-ahead limit's CPU behaviour (its switch, SALT_MAX_STEPS_AHEAD:
// step_options_test.cpp); tests/gpu holds it to waiting on a card.
#include <gtest/gtest.h>

#include "training/step/steps_ahead.h"

using salt::cuda::StepsAhead;

// Without a card (device -1, as fit passes for the CPU) it counts steps and never waits.
TEST(StepsAhead, OnTheCpuItOnlyCounts) {
  StepsAhead ahead(1);
  for (int i = 0; i < 3; ++i) ahead.step_issued(-1);
  EXPECT_EQ(ahead.steps(), 3);
  EXPECT_EQ(ahead.waits(), 0);
  EXPECT_EQ(ahead.depth(), 1);
}
