// Real git repositories in temp dirs, built with libgit2, for the repro tests.
// Every test gets its own TempDir; libgit2's global/system config search paths
// point into it so the user's ~/.gitconfig (user.name, hooks, autocrlf...)
// cannot change what the tests see.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "repro/libgit2.h"
#include "repro/repository.h"
#include "support/test_support.h"

namespace salt::repro::testing {

namespace fs = std::filesystem;

// Throws std::runtime_error with libgit2's message when rc < 0 (helpers are not
// tests: a failure here is a broken fixture, reported by gtest as an exception).
void ok(int rc, const std::string& what);

class GitFixture : public ::testing::Test {
 protected:
  void SetUp() override;

  // A non-bare repository at `dir` (created) whose HEAD is the unborn branch "main".
  RepositoryPtr init_repo(const fs::path& dir);
  RepositoryPtr init_bare(const fs::path& dir);

  static void write(const fs::path& path, const std::string& content);
  static void stage(git_repository* repo, const std::string& rel);         // git add <rel>
  static void stage_removal(git_repository* repo, const std::string& rel);  // git rm --cached <rel>
  // git add -A && git commit -m msg; returns the commit's full id.
  static std::string commit_all(git_repository* repo, const std::string& msg);
  static std::string head_id(git_repository* repo);
  static void set_config(git_repository* repo, const std::string& key, const std::string& value);
  static void add_remote(git_repository* repo, const std::string& name, const std::string& url);

  salt::testing::TempDir tmp;
  fs::path work;  // tmp/work: the repository most tests use
};

struct FileInfo {
  std::string content;  // bytes, or the link target for symlinks
  bool executable = false;
  bool symlink = false;
  bool operator==(const FileInfo& o) const {
    return content == o.content && executable == o.executable && symlink == o.symlink;
  }
};
// Every file under root except .git/ and, when `repo` is given, those it ignores.
std::map<std::string, FileInfo> snapshot(const fs::path& root, git_repository* ignore_from = nullptr);

}  // namespace salt::repro::testing
