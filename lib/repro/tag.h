// `salt fit --tag`: an annotated tag named after the run directory, pointing at
// the commit the run was started from, pushed to a remote so the code of every
// tagged run can be found again by its name.
#pragma once
#include <filesystem>
#include <string>

#include "repro/repository.h"

namespace salt::repro {

struct TagOptions {
  std::string remote = "origin";  // remote to push to
  bool push = true;               // false: create the tag locally only
  std::string message;            // empty: "salt-cpp training run <name>"
};

struct TagResult {
  std::string name;        // the tag's name
  std::string commit;      // full id of the commit it points at (HEAD)
  std::string tag_object;  // full id of the annotated tag object
  std::string remote_url;  // where it was pushed; empty when not pushed
};

// The tag name for a run: the run directory's basename, e.g.
// logs/GN2_20261121-T101530/ -> "GN2_20261121-T101530".
std::string tag_name_for_run(const std::filesystem::path& run_dir);

// Creates the annotated tag `name` -> HEAD with the repository's user.name and
// user.email as tagger (falling back to "salt-cpp <salt-cpp@localhost>") and
// pushes refs/tags/<name> to options.remote (never forced). Everything that can
// be checked is checked before the tag is created: a valid name, a HEAD commit,
// no local tag of that name, the remote exists. If the push then fails, the
// local tag is deleted again, so a failed --tag leaves nothing behind.
// Failures throw salt::InputError, one line saying what failed: invalid name,
// no commit, tag exists locally, no such remote (listing the remotes there
// are), remote unreachable, authentication failed, push rejected.
// Credentials: the ssh agent for ssh URLs, then libgit2's default credentials
// (Negotiate/NTLM for http); each tried once. No interactive prompts.
TagResult tag_and_push(const Repository& repo, const std::string& name, const TagOptions& options = {});

}  // namespace salt::repro
