#include "git_fixture.h"

#include <sys/stat.h>

#include <stdexcept>

namespace salt::repro::testing {

void ok(int rc, const std::string& what) {
  if (rc < 0) {
    const git_error* e = git_error_last();
    throw std::runtime_error(what + ": " + (e && e->message ? e->message : "?"));
  }
}

void GitFixture::SetUp() {
  ensure_libgit2();
  // Isolate from the user's and the machine's git configuration.
  fs::create_directories(tmp / "gitconfig");
  const std::string cfg = (tmp / "gitconfig").string();
  for (int level : {GIT_CONFIG_LEVEL_SYSTEM, GIT_CONFIG_LEVEL_XDG, GIT_CONFIG_LEVEL_GLOBAL, GIT_CONFIG_LEVEL_PROGRAMDATA})
    ok(git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, level, cfg.c_str()), "set config search path");
  work = tmp / "work";
}

static RepositoryPtr init(const fs::path& dir, bool bare) {
  git_repository_init_options opts;
  git_repository_init_options_init(&opts, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
  opts.flags = GIT_REPOSITORY_INIT_MKPATH | (bare ? GIT_REPOSITORY_INIT_BARE : 0);
  opts.initial_head = "main";
  git_repository* raw = nullptr;
  ok(git_repository_init_ext(&raw, dir.c_str(), &opts), "init " + dir.string());
  return RepositoryPtr(raw);
}

RepositoryPtr GitFixture::init_repo(const fs::path& dir) { return init(dir, false); }
RepositoryPtr GitFixture::init_bare(const fs::path& dir) { return init(dir, true); }

void GitFixture::write(const fs::path& path, const std::string& content) { salt::testing::write_file(path, content); }

static IndexPtr index_of(git_repository* repo) {
  git_index* raw = nullptr;
  ok(git_repository_index(&raw, repo), "open index");
  return IndexPtr(raw);
}

void GitFixture::stage(git_repository* repo, const std::string& rel) {
  auto idx = index_of(repo);
  ok(git_index_add_bypath(idx.get(), rel.c_str()), "add " + rel);
  ok(git_index_write(idx.get()), "write index");
}

void GitFixture::stage_removal(git_repository* repo, const std::string& rel) {
  auto idx = index_of(repo);
  ok(git_index_remove_bypath(idx.get(), rel.c_str()), "rm " + rel);
  ok(git_index_write(idx.get()), "write index");
}

std::string GitFixture::commit_all(git_repository* repo, const std::string& msg) {
  auto idx = index_of(repo);
  ok(git_index_add_all(idx.get(), nullptr, GIT_INDEX_ADD_DEFAULT, nullptr, nullptr), "add -A");
  ok(git_index_update_all(idx.get(), nullptr, nullptr, nullptr), "add -u");
  ok(git_index_write(idx.get()), "write index");
  git_oid tree_id;
  ok(git_index_write_tree(&tree_id, idx.get()), "write tree");
  git_tree* tree_raw = nullptr;
  ok(git_tree_lookup(&tree_raw, repo, &tree_id), "lookup tree");
  TreePtr tree(tree_raw);
  git_object* parent_raw = nullptr;
  ObjectPtr parent;
  if (git_revparse_single(&parent_raw, repo, "HEAD^{commit}") == 0) parent.reset(parent_raw);
  git_error_clear();
  git_signature* sig_raw = nullptr;
  ok(git_signature_now(&sig_raw, "Test Author", "test@example.com"), "signature");
  SignaturePtr sig(sig_raw);
  const git_commit* parents[1] = {reinterpret_cast<const git_commit*>(parent.get())};
  git_oid id;
  ok(git_commit_create(&id, repo, "HEAD", sig.get(), sig.get(), nullptr, msg.c_str(), tree.get(), parent ? 1 : 0,
                       parents),
     "commit");
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &id);
  return hex;
}

std::string GitFixture::head_id(git_repository* repo) {
  git_oid id;
  ok(git_reference_name_to_id(&id, repo, "HEAD"), "resolve HEAD");
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &id);
  return hex;
}

void GitFixture::set_config(git_repository* repo, const std::string& key, const std::string& value) {
  git_config* raw = nullptr;
  ok(git_repository_config(&raw, repo), "open config");
  ConfigPtr cfg(raw);
  ok(git_config_set_string(cfg.get(), key.c_str(), value.c_str()), "set " + key);
}

void GitFixture::add_remote(git_repository* repo, const std::string& name, const std::string& url) {
  git_remote* raw = nullptr;
  ok(git_remote_create(&raw, repo, name.c_str(), url.c_str()), "remote add " + name);
  RemotePtr remote(raw);
}

std::map<std::string, FileInfo> snapshot(const fs::path& root, git_repository* ignore_from) {
  std::map<std::string, FileInfo> files;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const auto& p = it->path();
    std::string rel = p.lexically_relative(root).generic_string();
    if (it->is_directory() && !it->is_symlink()) {
      if (p.filename() == ".git") it.disable_recursion_pending();
      continue;
    }
    if (ignore_from) {
      int ignored = 0;
      ok(git_ignore_path_is_ignored(&ignored, ignore_from, rel.c_str()), "check ignore");
      if (ignored) continue;
    }
    FileInfo info;
    if (it->is_symlink()) {
      info.symlink = true;
      info.content = fs::read_symlink(p).string();
    } else {
      info.content = salt::testing::read_file(p);
      info.executable = (fs::status(p).permissions() & fs::perms::owner_exec) != fs::perms::none;
    }
    files[rel] = info;
  }
  return files;
}

}  // namespace salt::repro::testing
