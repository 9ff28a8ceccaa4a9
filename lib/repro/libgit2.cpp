#include "repro/libgit2.h"

#include "core/errors.h"

namespace salt::repro {

namespace {
struct Libgit2Lifetime {
  Libgit2Lifetime() { git_libgit2_init(); }
  ~Libgit2Lifetime() { git_libgit2_shutdown(); }
  Libgit2Lifetime(const Libgit2Lifetime&) = delete;
  Libgit2Lifetime& operator=(const Libgit2Lifetime&) = delete;
};
}  // namespace

void ensure_libgit2() {
  // Thread-safe since C++11: exactly one init, and the matching shutdown runs
  // with the other statics at exit.
  static Libgit2Lifetime lifetime;
}

std::string last_git_error(int code) {
  const git_error* err = git_error_last();
  std::string msg = (err && err->message) ? err->message : "";
  // Error messages end up inside our own one-line messages: no newlines, no
  // trailing period.
  for (auto& c : msg)
    if (c == '\n' || c == '\r') c = ' ';
  while (!msg.empty() && (msg.back() == ' ' || msg.back() == '.')) msg.pop_back();
  if (msg.empty()) msg = "libgit2 error " + std::to_string(code);
  return msg;
}

void check(int rc, const std::string& what) {
  if (rc < 0) throw InputError(what + ": " + last_git_error(rc));
}

}  // namespace salt::repro
