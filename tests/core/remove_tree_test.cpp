// lib/core/remove_tree: a whole tree goes, links are not followed, a missing path
// is no error, a failure says which path; and no salt-cpp source calls
// std::filesystem::remove_all (pip LibTorch's copy of it crashes, see the header).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "core/remove_tree.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

void touch(const fs::path& p) { std::ofstream(p) << "x"; }

TEST(RemoveTree, RemovesANestedTreeButNotWhatItsLinksPointTo) {
  TempDir tmp;
  const auto outside = tmp.path() / "outside";
  fs::create_directories(outside);
  touch(outside / "keep.txt");
  const auto tree = tmp.path() / "tree";
  fs::create_directories(tree / "a" / "b" / "c");
  touch(tree / "top.txt");
  touch(tree / "a" / "b" / "c" / "deep.txt");
  fs::create_directory_symlink(outside, tree / "a" / "link_to_outside");
  fs::create_symlink(tree / "does_not_exist", tree / "dangling");

  std::error_code ec;
  EXPECT_TRUE(remove_tree(tree, ec)) << ec.message();
  EXPECT_FALSE(fs::exists(fs::symlink_status(tree)));
  EXPECT_TRUE(fs::exists(outside / "keep.txt"));
}

TEST(RemoveTree, AFileOrAMissingPath) {
  TempDir tmp;
  touch(tmp.path() / "file");
  remove_tree(tmp.path() / "file");
  EXPECT_FALSE(fs::exists(tmp.path() / "file"));
  std::error_code ec;
  EXPECT_TRUE(remove_tree(tmp.path() / "never_there", ec));
  EXPECT_FALSE(ec);
}

TEST(RemoveTree, APathThatCannotBeReadIsReportedWithItsPath) {
  TempDir tmp;
  touch(tmp.path() / "plain");
  const auto below = tmp.path() / "plain" / "below";  // ENOTDIR, for root too
  std::error_code ec;
  EXPECT_FALSE(remove_tree(below, ec));
  EXPECT_EQ(ec, std::errc::not_a_directory) << ec.message();
  try {
    remove_tree(below);
    ADD_FAILURE() << "no exception";
  } catch (const fs::filesystem_error& e) {
    EXPECT_NE(std::string(e.what()).find("plain/below"), std::string::npos) << e.what();
  }
}

TEST(RemoveTree, NoSourceCallsStdFilesystemRemoveAll) {
  const std::regex call(R"((fs|filesystem)::remove_all\s*\()");
  std::string offenders;
  for (const char* top : {"lib", "app", "bench", "tests"})
    for (const auto& e : fs::recursive_directory_iterator(salt::testing::source_dir() / top)) {
      if (!e.is_regular_file() || (e.path().extension() != ".cpp" && e.path().extension() != ".h")) continue;
      std::ifstream in(e.path());
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (e.path().filename() != "remove_tree_test.cpp" && std::regex_search(text, call)) offenders += e.path().string() + " ";
    }
  EXPECT_EQ(offenders, "") << "use salt::remove_tree (core/remove_tree.h)";
}

}  // namespace
}  // namespace salt::testing
