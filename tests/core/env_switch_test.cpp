// On/off switches from the environment (core/env_switch.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <stdexcept>

#include "core/env_switch.h"
#include "core/env_switches.h"
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

// SALT_DIST_TIMEOUT and SALT_DIST_BUCKET_MB had a parser each.
TEST(EnvSwitch, NumbersFollowTheSameRuleNamingTheRange) {
  EXPECT_EQ(env_number("SALT_X", nullptr, 0.001, 1e7, "seconds"), std::nullopt);
  EXPECT_EQ(env_number("SALT_X", "", 0.001, 1e7, "seconds"), std::nullopt);
  EXPECT_EQ(env_number("SALT_X", "2.5", 0.001, 1e7, "seconds"), 2.5);
  EXPECT_EQ(env_number("SALT_X", "0.001", 0.001, 1e7, "seconds"), 0.001);
  for (const char* bad : {"soon", "0", "1e9", "2.5s", " 2", "nan", "inf"})
    EXPECT_THROW(env_number("SALT_X", bad, 0.001, 1e7, "seconds"), UsageError) << bad;
  try {
    env_number("SALT_X", "1e9", 0.001, 1e7, "a number of seconds");
    ADD_FAILURE() << "SALT_X=1e9 accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "SALT_X=1e9: expected a number of seconds from 0.001 to 10000000");
  }
}

// Every variable of salt-cpp's own is read through its table (core/env_switches.h).
TEST(EnvSwitches, OnlyDeclaredVariablesAreReadAndEachHasItsEntry) {
  EXPECT_THROW(env_value("SALT_NOT_A_SWITCH"), std::logic_error);
  EXPECT_THROW(process_env("SALT_NOT_A_SWITCH"), std::logic_error);
  setenv("SALT_DIST_TIMEOUT", "7", 1);
  EXPECT_STREQ(env_value("SALT_DIST_TIMEOUT"), "7");
  EXPECT_STREQ(process_env("SALT_DIST_TIMEOUT"), "7");
  bool recorded = false;
  for (const auto& [name, value] : env_switches_set()) recorded = recorded || (name == "SALT_DIST_TIMEOUT" && value == "7");
  EXPECT_TRUE(recorded);
  unsetenv("SALT_DIST_TIMEOUT");
  EXPECT_EQ(env_value("SALT_DIST_TIMEOUT"), nullptr);
  for (const auto& s : env_switches()) {
    EXPECT_TRUE(*s.values && *s.fallback && *s.help && *s.owner) << s.name;
    EXPECT_NE(env_switches_help().find(s.name), std::string::npos) << s.name;
  }
}

}  // namespace
}  // namespace salt
