#include "repro/credentials.h"

#include <cstdlib>
#include <string>

namespace salt::repro {

int acquire_credentials(git_credential** out, const char* /*url*/, const char* username_from_url,
                        unsigned int allowed_types, void* payload) {
  auto* st = static_cast<CredentialState*>(payload);
  if (++st->calls > kMaxCredentialCalls) {
    st->exhausted = true;
    git_error_set_str(GIT_ERROR_NET, "too many authentication attempts");
    return GIT_EAUTH;
  }
  std::string user = username_from_url ? username_from_url : "";
  if (user.empty()) {
    const char* env_user = std::getenv("USER");
    user = env_user && *env_user ? env_user : "git";
  }
  if ((allowed_types & GIT_CREDENTIAL_USERNAME) && !st->tried_username) {
    st->tried_username = true;
    return git_credential_username_new(out, user.c_str());
  }
  if ((allowed_types & GIT_CREDENTIAL_SSH_KEY) && !st->tried_agent) {
    st->tried_agent = true;
    return git_credential_ssh_key_from_agent(out, user.c_str());
  }
  if ((allowed_types & GIT_CREDENTIAL_DEFAULT) && !st->tried_default) {
    st->tried_default = true;
    return git_credential_default_new(out);
  }
  st->exhausted = true;
  git_error_set_str(GIT_ERROR_NET, "no usable credentials (tried the ssh agent and default credentials)");
  return GIT_EAUTH;
}

}  // namespace salt::repro
