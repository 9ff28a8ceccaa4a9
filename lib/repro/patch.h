// The record `salt fit --force` keeps of a dirty tree: one patch that turns a
// checkout of HEAD into exactly the working tree the run was started from.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "repro/repository.h"

namespace salt::repro {

inline constexpr const char* kUncommittedPatchName = "uncommitted.patch";

struct PatchOptions {
  // Left out of the patch (files or directories, absolute or relative to the
  // working tree): the run outputs, so a patch never carries checkpoints.
  std::vector<std::filesystem::path> exclude;
  // Files whose working-tree size exceeds this are left out (and named in the
  // patch's first line and in `omitted`): a stray multi-GB .h5 in the tree must
  // not become a multi-GB patch held in memory. 0: no limit.
  std::uintmax_t max_file_bytes = 64ull << 20;
};

struct UncommittedPatch {
  std::string text;                  // empty when the tree is clean
  std::vector<std::string> omitted;  // paths left out for their size
};

// The patch HEAD -> working tree, in `git diff` format with full object ids:
// staged and unstaged changes together (as `git diff HEAD`), deletions, mode
// changes, and untracked files that are not ignored as new files. Binary files
// are included as "GIT binary patch" literals. `git apply` (or libgit2's
// git_apply) on a clean checkout of HEAD reproduces the tree byte for byte.
// Left out: ignored files, submodules, `options.exclude`, and files over
// `options.max_file_bytes`; when any are left out for size the patch starts with
// one "# salt-cpp: ..." line naming them (git apply skips text before the first
// "diff --git"). Content passes through the repository's clean filters
// (core.autocrlf, .gitattributes eol, LFS) as in `git diff`; with such filters
// the restored files are the checked-out form, not necessarily the exact bytes.
// An unborn HEAD (no commit yet) diffs against the empty tree.
UncommittedPatch make_uncommitted_patch(const Repository& repo, const PatchOptions& options = {});

// make_uncommitted_patch(...).text
std::string uncommitted_patch(const Repository& repo, const PatchOptions& options = {});

struct SavedPatch {
  std::filesystem::path path;        // <run_dir>/uncommitted.patch
  std::vector<std::string> omitted;  // as in UncommittedPatch: worth a warning
};

// Writes the patch to <run_dir>/uncommitted.patch with write_file_atomic;
// writes nothing and returns nullopt when the tree is clean.
std::optional<SavedPatch> save_uncommitted_patch(const Repository& repo, const std::filesystem::path& run_dir,
                                                 const PatchOptions& options = {});

}  // namespace salt::repro
