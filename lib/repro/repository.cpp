#include "repro/repository.h"

#include "core/errors.h"

namespace salt::repro {
namespace fs = std::filesystem;

namespace {
fs::path strip_trailing_slash(const char* p) {
  if (!p) return {};
  std::string s = p;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return fs::path(s);
}
}  // namespace

std::optional<Repository> Repository::discover(const fs::path& start, const std::vector<fs::path>& ceilings) {
  ensure_libgit2();
  // libgit2 takes the ceilings as one GIT_PATH_LIST_SEPARATOR-joined string.
  std::string ceiling_list;
  for (const auto& c : ceilings) {
    if (!ceiling_list.empty()) ceiling_list += GIT_PATH_LIST_SEPARATOR;
    ceiling_list += fs::absolute(c).lexically_normal().string();
  }
  // An absolute start keeps messages unambiguous whatever the cwd was.
  std::error_code ec;
  fs::path abs = fs::absolute(start, ec);
  if (ec) abs = start;
  git_repository* raw = nullptr;
  int rc = git_repository_open_ext(&raw, abs.c_str(), 0, ceiling_list.empty() ? nullptr : ceiling_list.c_str());
  RepositoryPtr repo(raw);
  if (rc == GIT_ENOTFOUND) {
    git_error_clear();
    return std::nullopt;
  }
  if (rc == GIT_EOWNER)
    throw InputError("cannot use the git repository holding " + abs.string() + ": " + last_git_error(rc) +
                     " (it belongs to another user; see git's safe.directory)");
  check(rc, "cannot open the git repository holding " + abs.string());
  if (git_repository_is_bare(repo.get())) return std::nullopt;
  return Repository(std::move(repo));
}

Repository Repository::open(const fs::path& path) {
  ensure_libgit2();
  git_repository* raw = nullptr;
  int rc = git_repository_open_ext(&raw, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr);
  RepositoryPtr repo(raw);
  check(rc, "cannot open git repository " + path.string());
  return Repository(std::move(repo));
}

bool Repository::is_bare() const { return git_repository_is_bare(repo_.get()) != 0; }

fs::path Repository::workdir() const { return strip_trailing_slash(git_repository_workdir(repo_.get())); }

fs::path Repository::git_dir() const { return strip_trailing_slash(git_repository_path(repo_.get())); }

std::string Repository::display_path() const {
  auto wd = workdir();
  return (wd.empty() ? git_dir() : wd).string();
}

}  // namespace salt::repro
