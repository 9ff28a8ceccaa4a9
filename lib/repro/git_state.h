// What a run records about the code it ran: HEAD, branch and the uncommitted
// changes in the working tree, read through libgit2 (never the git CLI).
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "repro/repository.h"

namespace salt::repro {

enum class DirtyKind {
  Staged,      // the index differs from HEAD (added, modified, deleted, renamed)
  Modified,    // a tracked file differs from the index
  Deleted,     // a tracked file is gone from the working tree
  TypeChange,  // a tracked path changed type (file <-> symlink) in the working tree
  Untracked,   // a file git does not track and .gitignore does not ignore
  Conflicted,  // an unresolved merge conflict
};
const char* to_string(DirtyKind kind);

struct DirtyPath {
  std::string path;              // relative to the top of the working tree, '/'-separated
  std::vector<DirtyKind> kinds;  // e.g. {Staged, Modified} for "git add" then edited again
  std::string label() const;     // "modified", "staged+modified", ...
};

struct RepoState {
  std::filesystem::path workdir;     // top of the working tree
  std::optional<std::string> commit;  // full hex id of HEAD; nullopt before the first commit
  std::optional<std::string> branch;  // short branch name; nullopt when HEAD is detached
  std::vector<DirtyPath> dirty;       // sorted by path; empty when clean
  bool is_dirty() const { return !dirty.empty(); }
};

// Reads HEAD and the status of the working tree. What counts as dirty: staged
// changes, unstaged changes to tracked files, and untracked files that are not
// ignored (.gitignore, .git/info/exclude and core.excludesFile are honoured).
// Submodules are left out entirely: a submodule with new commits or local edits
// does not make the tree dirty (its own repository is not inspected).
// `exclude`: paths (files or directories, absolute or relative to the working
// tree) whose changes do not count, meant for the run outputs (the logs root)
// when they sit inside the repository without being ignored.
RepoState read_state(const Repository& repo, const std::vector<std::filesystem::path>& exclude = {});

// Discovery plus read_state: nullopt when `dir` is in no repository (see
// Repository::discover for ceilings and errors).
std::optional<RepoState> inspect_repository(const std::filesystem::path& dir,
                                            const std::vector<std::filesystem::path>& exclude = {},
                                            const std::vector<std::filesystem::path>& ceilings = {});

}  // namespace salt::repro
