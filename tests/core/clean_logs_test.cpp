// lib/core/clean_logs (salt's clean_logs utility): directories without the named
// subdirectory go, everything else stays; links are never followed into; bad
// arguments are one line. `salt clean_logs` itself is run in tests/cli.
#include <gtest/gtest.h>

#include <fstream>

#include "core/clean_logs.h"
#include "core/errors.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

TEST(CleanLogs, DeletesTheDirectoriesWithoutTheSubdirectory) {
  TempDir dir;
  const auto logs = dir / "logs";
  fs::create_directories(logs / "kept" / "ckpts");
  fs::create_directories(logs / "failed" / "nested");
  write_file(logs / "failed" / "nested" / "events", "x");
  fs::create_directories(logs / "ckpts_is_a_file");
  write_file(logs / "ckpts_is_a_file" / "ckpts", "x");
  fs::create_directories(logs / "ckpts_via_link");
  fs::create_directory_symlink(logs / "kept" / "ckpts", logs / "ckpts_via_link" / "ckpts");
  write_file(logs / "notes.txt", "x");
  // A link to a run without ckpts, outside logs/: neither the link nor its target goes.
  fs::create_directories(dir / "elsewhere" / "run");
  fs::create_directory_symlink(dir / "elsewhere" / "run", logs / "linked");

  const auto result = delete_dirs_without_subdir(logs, "ckpts");
  ASSERT_EQ(result.deleted.size(), 2u);
  EXPECT_EQ(result.deleted[0], logs / "ckpts_is_a_file");
  EXPECT_EQ(result.deleted[1], logs / "failed");
  EXPECT_EQ(result.links, std::vector<fs::path>{logs / "linked"});
  EXPECT_FALSE(fs::exists(logs / "failed"));
  EXPECT_FALSE(fs::exists(logs / "ckpts_is_a_file"));
  EXPECT_TRUE(fs::exists(logs / "kept" / "ckpts"));
  EXPECT_TRUE(fs::exists(logs / "ckpts_via_link"));  // salt follows a link named ckpts too
  EXPECT_TRUE(fs::exists(logs / "notes.txt"));
  EXPECT_TRUE(fs::is_symlink(logs / "linked"));
  EXPECT_TRUE(fs::exists(dir / "elsewhere" / "run"));
}

TEST(CleanLogs, BadArgumentsAreOneLine) {
  TempDir dir;
  fs::create_directories(dir / "logs" / "run");
  for (const std::string bad : {"", ".", "..", "a/b"}) {
    try {
      delete_dirs_without_subdir(dir / "logs", bad);
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--subdirectory must be a plain directory name"), std::string::npos) << e.what();
    }
  }
  write_file(dir / "file", "x");
  for (const auto& folder : {dir / "missing", dir / "file"}) {
    try {
      delete_dirs_without_subdir(folder, "ckpts");
      ADD_FAILURE() << folder << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(folder.string() + " is not a directory"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(fs::exists(dir / "logs" / "run"));
}

}  // namespace
}  // namespace salt::testing
