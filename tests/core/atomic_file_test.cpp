// lib/core/atomic_file: a file is either its old content or its new content,
// never half of it, and a failure names the path and leaves no temp file behind
// (on a real full tmpfs, a path under a regular file, and a normal directory).
#include <gtest/gtest.h>

#include <set>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "data/tiny_fs.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(AtomicFile, ReplacesContentAndLeavesNoTempFile) {
  TempDir dir;
  write_file_atomic(dir / "a.yaml", "first\n");
  write_file_atomic(dir / "a.yaml", "second\n");
  EXPECT_EQ(read_file(dir / "a.yaml"), "second\n");
  EXPECT_EQ(entries(dir.path()), (std::set<std::string>{"a.yaml"}));
}

TEST(AtomicFile, TempNamesAreUniqueSiblings) {
  TempDir dir;
  const auto target = dir / "config.yaml";
  std::set<fs::path> names;
  for (int i = 0; i < 50; ++i) {
    auto t = temp_name_for(target);
    EXPECT_EQ(t.parent_path(), target.parent_path());  // same file system: the rename is atomic
    EXPECT_NE(t, target);
    names.insert(t);
  }
  EXPECT_EQ(names.size(), 50u);
}

TEST(AtomicFile, FullDiskKeepsTheOldFileAndNamesThePath) {
  TinyFs tiny;
  SALT_REQUIRE(tiny.mounted(), tiny.why_not());
  write_file_atomic(tiny / "metrics.csv", "old\n");
  tiny.fill(4096);
  const auto e = error_of([&] { write_file_atomic(tiny / "metrics.csv", std::string(1 << 20, 'x')); });
  EXPECT_NE(e.find((tiny / "metrics.csv").string()), std::string::npos) << e;
  EXPECT_EQ(read_file(tiny / "metrics.csv"), "old\n");
  EXPECT_EQ(entries(tiny.path()), (std::set<std::string>{"filler", "metrics.csv"}));
}

TEST(AtomicFile, DirectoriesUnderAFileFailWithWhatTheyWereFor) {
  TempDir dir;
  write_file(dir / "plain", "x");
  const auto e = error_of([&] { create_directories_or_fail(dir / "plain" / "run", "run directory (trainer.default_root_dir)"); });
  EXPECT_NE(e.find("run directory (trainer.default_root_dir)"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { write_file_atomic(dir / "plain" / "x.yaml", "y"); }).find("x.yaml"), std::string::npos);
}

}  // namespace
}  // namespace salt::testing
