#include "repro/patch.h"

#include "core/atomic_file.h"
#include "repro/path_filter.h"

namespace salt::repro {

namespace {
// HEAD's tree, or null for an unborn HEAD (libgit2 then diffs from the empty tree).
TreePtr head_tree(git_repository* repo, const std::string& where) {
  git_object* raw = nullptr;
  int rc = git_revparse_single(&raw, repo, "HEAD^{tree}");
  ObjectPtr obj(raw);
  if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH) {
    git_error_clear();
    return TreePtr();
  }
  check(rc, "cannot read the HEAD tree of " + where);
  return TreePtr(reinterpret_cast<git_tree*>(obj.release()));
}

struct NotifyState {
  const PathFilter* filter;
  std::uintmax_t max_bytes;
  std::vector<std::string>* omitted;
};

// Called for every delta before it joins the diff: > 0 skips it.
int notify_cb(const git_diff*, const git_diff_delta* delta, const char*, void* payload) {
  auto* st = static_cast<NotifyState*>(payload);
  const char* path = delta->new_file.path ? delta->new_file.path : delta->old_file.path;
  if (!path) return 0;
  if (st->filter->excluded(path)) return 1;
  // The working-tree side's size comes from stat(), known before any content is read.
  if (st->max_bytes > 0 && delta->new_file.size > st->max_bytes) {
    st->omitted->push_back(path);
    return 1;
  }
  return 0;
}
}  // namespace

UncommittedPatch make_uncommitted_patch(const Repository& repo, const PatchOptions& options) {
  const std::string where = repo.display_path();
  TreePtr tree = head_tree(repo.get(), where);
  PathFilter filter(repo.workdir(), options.exclude);
  UncommittedPatch result;
  NotifyState notify{&filter, options.max_file_bytes, &result.omitted};

  git_diff_options opts;
  git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
  // INCLUDE_UNTRACKED + RECURSE + SHOW_UNTRACKED_CONTENT: untracked files appear
  // one by one with their content, as new files; ignored ones are not included.
  // SHOW_BINARY: binary files as applicable literals (not "Binary files differ"),
  // which also makes libgit2 print full ids, needed by `git apply` for them.
  opts.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS | GIT_DIFF_SHOW_UNTRACKED_CONTENT |
               GIT_DIFF_SHOW_BINARY | GIT_DIFF_IGNORE_SUBMODULES;
  opts.ignore_submodules = GIT_SUBMODULE_IGNORE_ALL;
  opts.id_abbrev = GIT_OID_HEXSZ;
  opts.notify_cb = notify_cb;
  opts.payload = &notify;

  // "with index": the working tree compared with HEAD, using the index only to
  // know which files are tracked, so staged and unstaged edits both count.
  git_diff* raw = nullptr;
  check(git_diff_tree_to_workdir_with_index(&raw, repo.get(), tree.get(), &opts),
        "cannot diff the working tree of " + where + " against HEAD");
  DiffPtr diff(raw);
  GitBuf buf;
  check(git_diff_to_buf(&buf.buf, diff.get(), GIT_DIFF_FORMAT_PATCH), "cannot format the patch of " + where);
  result.text = buf.str();
  if (!result.omitted.empty()) {
    std::string header = "# salt-cpp: left out of this patch (larger than " + std::to_string(options.max_file_bytes) +
                         " bytes):";
    for (const auto& p : result.omitted) header += " " + p;
    result.text = header + "\n" + result.text;
  }
  return result;
}

std::string uncommitted_patch(const Repository& repo, const PatchOptions& options) {
  return make_uncommitted_patch(repo, options).text;
}

std::optional<SavedPatch> save_uncommitted_patch(const Repository& repo, const std::filesystem::path& run_dir,
                                                 const PatchOptions& options) {
  auto patch = make_uncommitted_patch(repo, options);
  if (patch.text.empty()) return std::nullopt;
  SavedPatch saved{run_dir / kUncommittedPatchName, std::move(patch.omitted)};
  write_file_atomic(saved.path, patch.text);
  return saved;
}

}  // namespace salt::repro
