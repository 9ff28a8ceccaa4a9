// An open git repository with a working tree, found from a directory the way
// `git` itself finds it (walking up through the parents).
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "repro/libgit2.h"

namespace salt::repro {

class Repository {
 public:
  // The repository whose working tree holds `start` (a directory inside it, or
  // its top, or its .git). Returns nullopt when there is none, or when the only
  // one found is bare (no working tree whose state could matter for a run).
  // `ceilings` stop the upward walk like GIT_CEILING_DIRECTORIES does (tests use
  // it so that a temp dir inside someone's repository still counts as outside).
  // Other failures (unreadable, corrupt, owned by another user) throw
  // salt::InputError: silently recording "no repository" would hide them.
  static std::optional<Repository> discover(const std::filesystem::path& start,
                                            const std::vector<std::filesystem::path>& ceilings = {});

  // Opens exactly the repository at `path` (no walking up); bare ones too.
  // Throws salt::InputError if there is none.
  static Repository open(const std::filesystem::path& path);

  git_repository* get() const { return repo_.get(); }
  bool is_bare() const;
  // Top of the working tree, without a trailing slash; empty for bare ones.
  std::filesystem::path workdir() const;
  // The .git directory (or the bare repository itself).
  std::filesystem::path git_dir() const;
  // What to call this repository in messages: the working tree, else the git dir.
  std::string display_path() const;

 private:
  explicit Repository(RepositoryPtr repo) : repo_(std::move(repo)) {}
  RepositoryPtr repo_;
};

}  // namespace salt::repro
