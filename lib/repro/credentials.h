// Credentials for pushing a run's tag without ever prompting: salt fit runs in
// batch jobs where nobody could answer a prompt.
#pragma once
#include <git2.h>

namespace salt::repro {

// What one push has tried so far. libgit2 calls the credential callback again
// after every rejected attempt; remembering what was offered is what stops it
// from looping forever.
struct CredentialState {
  int calls = 0;
  bool tried_username = false;
  bool tried_agent = false;
  bool tried_default = false;
  bool exhausted = false;  // gave up: the push failed for lack of credentials
};

inline constexpr int kMaxCredentialCalls = 5;

// A git_credential_acquire_cb; `payload` is a CredentialState*. Offers, once
// each and in this order: the user name (ssh asks for it first when the URL has
// none: the URL's, else $USER), the ssh agent's keys for ssh URLs, and the
// default (Negotiate/NTLM) credentials for http(s). Then, or after
// kMaxCredentialCalls calls, returns GIT_EAUTH and sets `exhausted`.
// Plain user/password (http Basic) is never offered: there is nobody to ask.
int acquire_credentials(git_credential** out, const char* url, const char* username_from_url,
                        unsigned int allowed_types, void* payload);

}  // namespace salt::repro
