// libgit2 plumbing shared by the repro library: process-wide init, owning
// handles for libgit2 objects, and turning libgit2 error codes into one-line
// salt::InputError messages. Everything in salt::repro goes through here so no
// caller has to remember git_libgit2_init() or a matching *_free().
#pragma once
#include <git2.h>

#include <memory>
#include <string>

namespace salt::repro {

// Initialises libgit2 on first use and shuts it down at process exit. libgit2
// counts init/shutdown pairs; one function-local static keeps it to exactly one
// pair per process whatever order the callers come in.
void ensure_libgit2();

// unique_ptr deleters bound to libgit2's free functions.
template <typename T, void (*Free)(T*)>
struct GitDeleter {
  void operator()(T* p) const noexcept {
    if (p) Free(p);
  }
};
template <typename T, void (*Free)(T*)>
using GitHandle = std::unique_ptr<T, GitDeleter<T, Free>>;

using RepositoryPtr = GitHandle<git_repository, git_repository_free>;
using ObjectPtr = GitHandle<git_object, git_object_free>;
using CommitPtr = GitHandle<git_commit, git_commit_free>;
using TreePtr = GitHandle<git_tree, git_tree_free>;
using TagPtr = GitHandle<git_tag, git_tag_free>;
using ReferencePtr = GitHandle<git_reference, git_reference_free>;
using RemotePtr = GitHandle<git_remote, git_remote_free>;
using IndexPtr = GitHandle<git_index, git_index_free>;
using SignaturePtr = GitHandle<git_signature, git_signature_free>;
using StatusListPtr = GitHandle<git_status_list, git_status_list_free>;
using DiffPtr = GitHandle<git_diff, git_diff_free>;
using ConfigPtr = GitHandle<git_config, git_config_free>;

// git_buf and git_strarray are structs owned by the caller, not pointers; these
// free their contents on scope exit.
struct GitBuf {
  git_buf buf = GIT_BUF_INIT;
  GitBuf() = default;
  GitBuf(const GitBuf&) = delete;
  GitBuf& operator=(const GitBuf&) = delete;
  ~GitBuf() { git_buf_dispose(&buf); }
  std::string str() const { return buf.ptr ? std::string(buf.ptr, buf.size) : std::string(); }
};
struct GitStrArray {
  git_strarray array{nullptr, 0};
  GitStrArray() = default;
  GitStrArray(const GitStrArray&) = delete;
  GitStrArray& operator=(const GitStrArray&) = delete;
  ~GitStrArray() { git_strarray_dispose(&array); }
};

// libgit2's message for the last failure on this thread (without a trailing
// period or newline), or "libgit2 error <code>" when it left none.
std::string last_git_error(int code);

// Throws salt::InputError("<what>: <libgit2 message>") when rc < 0.
void check(int rc, const std::string& what);

}  // namespace salt::repro
