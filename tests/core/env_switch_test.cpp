// On/off switches from the environment (core/env_switch.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/env_switch.h"
#include "core/errors.h"

namespace salt {
namespace {

TEST(EnvSwitch, UnsetOrEmptyGivesTheDefaultZeroAndOneSayOffAndOn) {
  for (bool otherwise : {false, true}) {
    EXPECT_EQ(env_switch("SALT_X", nullptr, otherwise, "off", "on"), otherwise);
    EXPECT_EQ(env_switch("SALT_X", "", otherwise, "off", "on"), otherwise);
    EXPECT_FALSE(env_switch("SALT_X", "0", otherwise, "off", "on"));
    EXPECT_TRUE(env_switch("SALT_X", "1", otherwise, "off", "on"));
  }
}

TEST(EnvSwitch, AnotherValueIsOneLineNamingTheVariableAndBothMeanings) {
  try {
    env_switch("SALT_X", "yes", true, "flash attention", "salt-cpp's kernel");
    ADD_FAILURE() << "SALT_X=yes accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "SALT_X=yes: expected 0 (flash attention) or 1 (salt-cpp's kernel)");
  }
  EXPECT_THROW(env_switch("SALT_X", "true", false, "a", "b"), UsageError);
  EXPECT_THROW(env_switch("SALT_X", " 1", false, "a", "b"), UsageError);
}

TEST(EnvSwitch, NamedValuesFollowTheSameRuleNamingEveryValue) {
  const std::vector<EnvValue> values = {{"native", "LibTorch's"}, {"emulated", "salt-cpp's"}, {"off", "none"}};
  EXPECT_EQ(env_choice("SALT_X", nullptr, values), "");
  EXPECT_EQ(env_choice("SALT_X", "", values), "");
  EXPECT_EQ(env_choice("SALT_X", "emulated", values), "emulated");
  try {
    env_choice("SALT_X", "nativ", values);
    ADD_FAILURE() << "SALT_X=nativ accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "SALT_X=nativ: expected native (LibTorch's), emulated (salt-cpp's) or off (none)");
  }
  EXPECT_THROW(env_choice("SALT_X", "Native", values), UsageError);
}

// SALT_MAX_STEPS_AHEAD had its own parser ("SALT_MAX_STEPS_AHEAD: expected ..., got 'two'").
TEST(EnvSwitch, WholeNumbersFollowTheSameRuleNamingTheRange) {
  EXPECT_EQ(env_whole_number("SALT_X", nullptr, 0, 1000), std::nullopt);
  EXPECT_EQ(env_whole_number("SALT_X", "", 0, 1000), std::nullopt);
  EXPECT_EQ(env_whole_number("SALT_X", "0", 0, 1000), 0);
  EXPECT_EQ(env_whole_number("SALT_X", "1000", 0, 1000), 1000);
  for (const char* bad : {"two", "-1", "2.5", " 2", "+2", "1001", "99999999999"})
    EXPECT_THROW(env_whole_number("SALT_X", bad, 0, 1000), UsageError) << bad;
  try {
    env_whole_number("SALT_X", "two", 1, 8, "4 for each of 2 cores");
    ADD_FAILURE() << "SALT_X=two accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "SALT_X=two: expected a whole number from 1 to 8 (4 for each of 2 cores)");
  }
}

}  // namespace
}  // namespace salt
