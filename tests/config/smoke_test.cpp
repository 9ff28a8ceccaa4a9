#include <gtest/gtest.h>
#include "core/errors.h"
TEST(Smoke, UsageErrorExitCode) { EXPECT_EQ(salt::UsageError("x").exit_code(), 2); }
