// lib/core/path_join: configured names stay below their folder.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/path_join.h"

#include <vector>

namespace salt::testing {
namespace {

TEST(JoinBelow, NestedNamesStayBelowTheBase) {
  EXPECT_EQ(join_below("/logs", "run", "x"), std::filesystem::path("/logs/run"));
  EXPECT_EQ(join_below("/logs", "a/b/./c", "x"), std::filesystem::path("/logs/a/b/./c"));
  EXPECT_EQ(join_below("/logs", "", "x"), std::filesystem::path("/logs"));
  EXPECT_EQ(join_below("/logs", "v..1", "x"), std::filesystem::path("/logs/v..1"));  // dots inside a name are fine
}

TEST(JoinBelow, AbsoluteOrClimbingNamesAreRefusedByName) {
  for (const std::string& bad : std::vector<std::string>{"/etc", "..", "../x", "a/../../x", "a/..", std::string("a\0b", 3)}) {
    try {
      join_below("/logs", bad, "TensorBoardLogger 'name'");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("TensorBoardLogger 'name' '", 0), 0u) << what;
      EXPECT_NE(what.find("must name a folder below /logs"), std::string::npos) << what;
    }
  }
}

TEST(JoinBelow, ALongNameIsCutInTheMessage) {
  try {
    join_below("/logs", "/" + std::string(100000, 'x'), "TensorBoardLogger 'name'");
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_LT(what.size(), 400u);
    EXPECT_NE(what.find("... (99801 more characters)"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace salt::testing
