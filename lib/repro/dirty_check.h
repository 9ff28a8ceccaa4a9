// The check `salt fit` runs before training: refuse to train from a working
// tree whose state no commit describes, unless the user says --force.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "repro/git_state.h"

namespace salt::repro {

// How many offending paths the refusal names before "and N more".
inline constexpr size_t kMaxListedDirtyPaths = 10;

// "modified: a.cpp, untracked: notes.txt, staged: b.yaml and 3 more": the first
// `max_paths` entries of state.dirty, in path order.
std::string describe_dirty(const RepoState& state, size_t max_paths = kMaxListedDirtyPaths);

// Throws salt::InputError when the tree is dirty, in one line:
//   uncommitted changes in /repo (modified: a.cpp, untracked: notes.txt); commit
//   them or rerun with --force
// Does nothing on a clean tree. The caller skips it under fast_dev_run/--force.
void refuse_if_dirty(const RepoState& state);

// What salt-cpp itself writes into the working directory, never counted as
// uncommitted changes: the run directories' root and the batch helpers' job
// scripts and logs (slurm/, condor/), which exist before the job's fit starts.
std::vector<std::filesystem::path> salt_output_dirs(const std::filesystem::path& logs_root,
                                                    const std::filesystem::path& workdir);

}  // namespace salt::repro
