#include "repro/git_state.h"

#include <algorithm>

#include "repro/path_filter.h"

namespace salt::repro {

const char* to_string(DirtyKind kind) {
  switch (kind) {
    case DirtyKind::Staged: return "staged";
    case DirtyKind::Modified: return "modified";
    case DirtyKind::Deleted: return "deleted";
    case DirtyKind::TypeChange: return "typechange";
    case DirtyKind::Untracked: return "untracked";
    case DirtyKind::Conflicted: return "conflicted";
  }
  return "changed";
}

std::string DirtyPath::label() const {
  std::string out;
  for (auto k : kinds) {
    if (!out.empty()) out += '+';
    out += to_string(k);
  }
  return out;
}

namespace {

// HEAD's commit and branch. An unborn branch (no commit yet) keeps its name and
// has no commit; a detached HEAD has a commit and no branch.
void read_head(git_repository* repo, RepoState& state) {
  git_reference* raw = nullptr;
  int rc = git_repository_head(&raw, repo);
  ReferencePtr head(raw);
  if (rc == GIT_EUNBORNBRANCH || rc == GIT_ENOTFOUND) {
    git_error_clear();
    git_reference* sym_raw = nullptr;
    if (git_reference_lookup(&sym_raw, repo, "HEAD") == 0) {
      ReferencePtr sym(sym_raw);
      if (const char* target = git_reference_symbolic_target(sym.get())) {
        std::string name = target;
        const std::string prefix = "refs/heads/";
        if (name.rfind(prefix, 0) == 0) state.branch = name.substr(prefix.size());
      }
    }
    git_error_clear();
    return;
  }
  check(rc, "cannot read HEAD of " + state.workdir.string());
  git_object* obj_raw = nullptr;
  check(git_reference_peel(&obj_raw, head.get(), GIT_OBJECT_COMMIT),
        "HEAD of " + state.workdir.string() + " is not a commit");
  ObjectPtr obj(obj_raw);
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, git_object_id(obj.get()));
  state.commit = hex;
  if (!git_repository_head_detached(repo) && git_reference_is_branch(head.get()))
    state.branch = git_reference_shorthand(head.get());
}

std::vector<DirtyKind> kinds_of(unsigned int s) {
  std::vector<DirtyKind> kinds;
  if (s & GIT_STATUS_CONFLICTED) return {DirtyKind::Conflicted};
  if (s & (GIT_STATUS_INDEX_NEW | GIT_STATUS_INDEX_MODIFIED | GIT_STATUS_INDEX_DELETED | GIT_STATUS_INDEX_RENAMED |
           GIT_STATUS_INDEX_TYPECHANGE))
    kinds.push_back(DirtyKind::Staged);
  if (s & GIT_STATUS_WT_NEW) kinds.push_back(DirtyKind::Untracked);
  if (s & (GIT_STATUS_WT_MODIFIED | GIT_STATUS_WT_RENAMED | GIT_STATUS_WT_UNREADABLE))
    kinds.push_back(DirtyKind::Modified);
  if (s & GIT_STATUS_WT_DELETED) kinds.push_back(DirtyKind::Deleted);
  if (s & GIT_STATUS_WT_TYPECHANGE) kinds.push_back(DirtyKind::TypeChange);
  return kinds;
}

std::vector<DirtyPath> read_dirty(git_repository* repo, const std::string& where, const PathFilter& filter) {
  git_status_options opts;
  git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION);
  opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
  // Untracked files are listed one by one (not as a directory) so that the
  // message and the patch name real files; ignored files are not listed at all.
  opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
               GIT_STATUS_OPT_EXCLUDE_SUBMODULES | GIT_STATUS_OPT_SORT_CASE_SENSITIVELY;
  git_status_list* raw = nullptr;
  check(git_status_list_new(&raw, repo, &opts), "cannot read the status of " + where);
  StatusListPtr list(raw);
  std::vector<DirtyPath> dirty;
  size_t n = git_status_list_entrycount(list.get());
  for (size_t i = 0; i < n; ++i) {
    const git_status_entry* e = git_status_byindex(list.get(), i);
    if (!e || e->status == GIT_STATUS_CURRENT || (e->status & GIT_STATUS_IGNORED)) continue;
    auto kinds = kinds_of(e->status);
    if (kinds.empty()) continue;
    // The working-tree side names the file as it is now; a staged deletion only
    // has the HEAD-to-index side.
    const git_diff_delta* d = e->index_to_workdir ? e->index_to_workdir : e->head_to_index;
    if (!d) continue;
    const char* path = d->new_file.path ? d->new_file.path : d->old_file.path;
    if (!path || filter.excluded(path)) continue;
    dirty.push_back({path, std::move(kinds)});
  }
  std::sort(dirty.begin(), dirty.end(), [](const DirtyPath& a, const DirtyPath& b) { return a.path < b.path; });
  return dirty;
}

}  // namespace

RepoState read_state(const Repository& repo, const std::vector<std::filesystem::path>& exclude) {
  RepoState state;
  state.workdir = repo.workdir();
  read_head(repo.get(), state);
  state.dirty = read_dirty(repo.get(), repo.display_path(), PathFilter(state.workdir, exclude));
  return state;
}

std::optional<RepoState> inspect_repository(const std::filesystem::path& dir,
                                            const std::vector<std::filesystem::path>& exclude,
                                            const std::vector<std::filesystem::path>& ceilings) {
  auto repo = Repository::discover(dir, ceilings);
  if (!repo) return std::nullopt;
  return read_state(*repo, exclude);
}

}  // namespace salt::repro
