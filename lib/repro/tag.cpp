#include "repro/tag.h"

#include <optional>

#include "core/errors.h"
#include "repro/credentials.h"

namespace salt::repro {
namespace fs = std::filesystem;

std::string tag_name_for_run(const fs::path& run_dir) {
  // "logs/run/" has an empty filename(); lexically_normal + parent handles it.
  fs::path p = run_dir.lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

namespace {

std::string oid_hex(const git_oid* id) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, id);
  return hex;
}

bool tag_exists(git_repository* repo, const std::string& name) {
  git_reference* raw = nullptr;
  int rc = git_reference_lookup(&raw, repo, ("refs/tags/" + name).c_str());
  ReferencePtr ref(raw);
  if (rc == GIT_ENOTFOUND) {
    git_error_clear();
    return false;
  }
  check(rc, "cannot look up tag '" + name + "'");
  return true;
}

std::string list_remotes(git_repository* repo) {
  GitStrArray names;
  if (git_remote_list(&names.array, repo) < 0 || names.array.count == 0) {
    git_error_clear();
    return "this repository has no remotes";
  }
  std::string out = "remotes: ";
  for (size_t i = 0; i < names.array.count; ++i) {
    if (i) out += ", ";
    out += names.array.strings[i];
  }
  return out;
}

SignaturePtr tagger(git_repository* repo) {
  git_signature* raw = nullptr;
  // user.name and user.email from the repository's config (local, global, system).
  if (git_signature_default(&raw, repo) == 0) return SignaturePtr(raw);
  git_error_clear();
  check(git_signature_now(&raw, "salt-cpp", "salt-cpp@localhost"), "cannot create a tagger signature");
  return SignaturePtr(raw);
}

// A URL that names a directory on this machine: a missing one is reported as
// such (libgit2 would say "unsupported URL protocol").
std::optional<fs::path> local_remote_path(const std::string& url) {
  if (url.rfind("file://", 0) == 0) return fs::path(url.substr(7));
  if (!url.empty() && (url[0] == '/' || url[0] == '.')) return fs::path(url);
  return std::nullopt;
}

// State shared with the libgit2 callbacks of one push.
struct PushState {
  CredentialState credentials;
  std::string rejected;  // the remote's status for our ref, if it refused it
};

int credentials_cb(git_credential** out, const char* url, const char* username_from_url, unsigned int allowed_types,
                   void* payload) {
  return acquire_credentials(out, url, username_from_url, allowed_types,
                             &static_cast<PushState*>(payload)->credentials);
}

int push_update_reference_cb(const char* /*refname*/, const char* status, void* payload) {
  // A non-null status is the remote's reason for refusing the update.
  if (status) static_cast<PushState*>(payload)->rejected = status;
  return 0;
}

void delete_local_tag(git_repository* repo, const std::string& name) {
  if (git_tag_delete(repo, name.c_str()) < 0) git_error_clear();
}

}  // namespace

TagResult tag_and_push(const Repository& repo, const std::string& name, const TagOptions& options) {
  git_repository* r = repo.get();
  const std::string where = repo.display_path();

  int valid = 0;
  if (name.empty() || git_tag_name_is_valid(&valid, name.c_str()) < 0 || !valid)
    throw InputError("cannot tag the run: '" + name + "' is not a valid git tag name");

  git_object* head_raw = nullptr;
  int rc = git_revparse_single(&head_raw, r, "HEAD^{commit}");
  ObjectPtr head(head_raw);
  if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH)
    throw InputError("cannot tag the run: " + where + " has no commit yet");
  check(rc, "cannot tag the run: cannot resolve HEAD in " + where);

  if (tag_exists(r, name))
    throw InputError("cannot tag the run: tag '" + name + "' already exists in " + where);

  RemotePtr remote;
  std::string url;
  if (options.push) {
    git_remote* remote_raw = nullptr;
    rc = git_remote_lookup(&remote_raw, r, options.remote.c_str());
    remote.reset(remote_raw);
    if (rc == GIT_ENOTFOUND || rc == GIT_EINVALIDSPEC) {
      git_error_clear();
      throw InputError("cannot push the run's tag: no git remote '" + options.remote + "' in " + where + " (" +
                       list_remotes(r) + ")");
    }
    check(rc, "cannot push the run's tag: cannot read remote '" + options.remote + "'");
    const char* u = git_remote_pushurl(remote.get());
    if (!u) u = git_remote_url(remote.get());
    url = u ? u : "";
    if (url.empty())
      throw InputError("cannot push the run's tag: remote '" + options.remote + "' has no URL");
    if (auto local = local_remote_path(url); local && !fs::exists(*local))
      throw InputError("cannot reach remote '" + options.remote + "' (" + url + "): " + local->string() +
                       " does not exist");
  }

  SignaturePtr sig = tagger(r);
  std::string message = options.message.empty() ? "salt-cpp training run " + name : options.message;
  if (message.back() != '\n') message += '\n';
  git_oid tag_id;
  rc = git_tag_create(&tag_id, r, name.c_str(), head.get(), sig.get(), message.c_str(), /*force=*/0);
  if (rc == GIT_EEXISTS)
    throw InputError("cannot tag the run: tag '" + name + "' already exists in " + where);
  check(rc, "cannot create tag '" + name + "' in " + where);

  TagResult result{name, oid_hex(git_object_id(head.get())), oid_hex(&tag_id), ""};
  if (!options.push) return result;

  const std::string who = "remote '" + options.remote + "' (" + url + ")";
  // From here on a failure removes the tag again: the error says it was not pushed.
  auto fail = [&](const std::string& msg) {
    delete_local_tag(r, name);
    throw InputError(msg + "; the local tag '" + name + "' was removed again");
  };

  PushState state;
  git_remote_callbacks callbacks;
  git_remote_init_callbacks(&callbacks, GIT_REMOTE_CALLBACKS_VERSION);
  callbacks.credentials = credentials_cb;
  callbacks.push_update_reference = push_update_reference_cb;
  callbacks.payload = &state;
  git_proxy_options proxy;
  git_proxy_options_init(&proxy, GIT_PROXY_OPTIONS_VERSION);
  proxy.type = GIT_PROXY_AUTO;  // http.proxy and the *_proxy variables, like git

  // Connecting first separates "cannot get there / not allowed in" from
  // "the remote refused the tag".
  rc = git_remote_connect(remote.get(), GIT_DIRECTION_PUSH, &callbacks, &proxy, nullptr);
  if (rc < 0) {
    std::string msg = last_git_error(rc);
    if (rc == GIT_EAUTH || state.credentials.exhausted)
      fail("authentication to " + who + " failed: " + msg);
    if (rc == GIT_ECERTIFICATE) fail("certificate check for " + who + " failed: " + msg);
    fail("cannot reach " + who + ": " + msg);
  }

  // git refuses to move an existing tag without --force, and so do we; saying
  // so here beats libgit2's fast-forward check, whose message for tags is obscure.
  const git_remote_head** heads = nullptr;
  size_t n_heads = 0;
  const std::string ref = "refs/tags/" + name;
  if (git_remote_ls(&heads, &n_heads, remote.get()) == 0) {
    for (size_t i = 0; i < n_heads; ++i)
      if (heads[i]->name && ref == heads[i]->name)
        fail(who + " rejected tag '" + name + "': it already has a tag of that name (" +
             oid_hex(&heads[i]->oid).substr(0, 12) + ")");
  } else {
    git_error_clear();
  }

  git_push_options push_opts;
  git_push_options_init(&push_opts, GIT_PUSH_OPTIONS_VERSION);
  push_opts.callbacks = callbacks;
  push_opts.proxy_opts = proxy;
  std::string spec = ref + ":" + ref;
  char* spec_c = spec.data();
  git_strarray refspecs{&spec_c, 1};
  rc = git_remote_push(remote.get(), &refspecs, &push_opts);
  if (rc < 0) {
    std::string msg = last_git_error(rc);
    if (rc == GIT_EAUTH || state.credentials.exhausted) fail("authentication to " + who + " failed: " + msg);
    if (!state.rejected.empty()) fail(who + " rejected tag '" + name + "': " + state.rejected);
    if (rc == GIT_ENONFASTFORWARD)
      fail(who + " rejected tag '" + name + "': " + msg + " (does a tag of that name exist there already?)");
    fail("pushing tag '" + name + "' to " + who + " failed: " + msg);
  }
  if (!state.rejected.empty()) fail(who + " rejected tag '" + name + "': " + state.rejected);
  result.remote_url = url;
  return result;
}

}  // namespace salt::repro
