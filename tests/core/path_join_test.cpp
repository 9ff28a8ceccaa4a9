// lib/core/path_join: configured names stay below their folder.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/path_join.h"
#include "support/test_support.h"

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

// A link below the folder that leads out of it is outside; the folder itself may be a link.
TEST(ReallyBelow, FoldersAreResolvedThroughLinksTheLastPartIsNot) {
  TempDir dir;
  const auto base = dir / "base", elsewhere = dir / "elsewhere";
  std::filesystem::create_directories(base / "inside");
  std::filesystem::create_directories(elsewhere);
  std::filesystem::create_directory_symlink(elsewhere, base / "out");
  std::filesystem::create_directory_symlink(base / "inside", base / "in");
  std::filesystem::create_symlink(elsewhere / "file", base / "last");
  std::filesystem::create_directory_symlink(base, dir / "base_link");
  EXPECT_TRUE(really_below(base / "inside" / "f.ckpt", base));
  EXPECT_TRUE(really_below(base / "in" / "f.ckpt", base));
  EXPECT_TRUE(really_below(base / "new" / "deeper" / "f.ckpt", base));  // not there yet: as it will be made
  EXPECT_TRUE(really_below(base / "last", base));                       // the link itself is below
  EXPECT_TRUE(really_below(dir / "base_link" / "inside" / "f.ckpt", dir / "base_link"));
  EXPECT_TRUE(really_below(base / "inside" / "f.ckpt", dir / "base_link"));
  EXPECT_FALSE(really_below(base / "out" / "f.ckpt", base));
  EXPECT_FALSE(really_below(base / "out" / "new" / "f.ckpt", base));
  EXPECT_FALSE(really_below(base / "inside" / ".." / ".." / "f.ckpt", base));
  EXPECT_FALSE(really_below(base / "out" / "..", base));  // the link's parent, elsewhere's, is dir
  EXPECT_FALSE(really_below(base, base));
  EXPECT_EQ(resolved_folders(base / "out" / "f.ckpt"), std::filesystem::canonical(elsewhere) / "f.ckpt");
}

}  // namespace
}  // namespace salt::testing
