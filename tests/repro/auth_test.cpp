// Authentication for the tag push: the credential callback gives up after
// trying each kind once, and a remote that demands a password fails with a
// clear "authentication ... failed" instead of looping or prompting.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "core/errors.h"
#include "git_fixture.h"
#include "repro/credentials.h"
#include "repro/tag.h"

namespace salt::repro::testing {
namespace {

TEST(Credentials, EachKindIsOfferedOnceThenItGivesUp) {
  ensure_libgit2();
  CredentialState st;
  const unsigned all = GIT_CREDENTIAL_USERNAME | GIT_CREDENTIAL_SSH_KEY | GIT_CREDENTIAL_DEFAULT;
  git_credential* cred = nullptr;
  ASSERT_EQ(acquire_credentials(&cred, "ssh://host/x", nullptr, all, &st), 0);
  EXPECT_EQ(git_credential_get_username(cred), std::string(std::getenv("USER") ? std::getenv("USER") : "git"));
  git_credential_free(cred);
  ASSERT_EQ(acquire_credentials(&cred, "ssh://git@host/x", "git", all, &st), 0);
  EXPECT_EQ(git_credential_has_username(cred), 1);
  git_credential_free(cred);
  ASSERT_EQ(acquire_credentials(&cred, "https://host/x", nullptr, all, &st), 0);
  git_credential_free(cred);
  EXPECT_FALSE(st.exhausted);
  EXPECT_EQ(acquire_credentials(&cred, "https://host/x", nullptr, all, &st), GIT_EAUTH);
  EXPECT_TRUE(st.exhausted);
}

TEST(Credentials, PasswordOnlyRemotesGetNothing) {
  ensure_libgit2();
  CredentialState st;
  git_credential* cred = nullptr;
  EXPECT_EQ(acquire_credentials(&cred, "https://host/x", nullptr, GIT_CREDENTIAL_USERPASS_PLAINTEXT, &st), GIT_EAUTH);
  EXPECT_TRUE(st.exhausted);
}

TEST(Credentials, CallCountIsCapped) {
  ensure_libgit2();
  CredentialState st;
  git_credential* cred = nullptr;
  for (int i = 0; i < kMaxCredentialCalls; ++i) acquire_credentials(&cred, "x", nullptr, 0, &st);
  EXPECT_EQ(acquire_credentials(&cred, "x", nullptr, GIT_CREDENTIAL_DEFAULT, &st), GIT_EAUTH);
}

// An HTTP server on 127.0.0.1 that answers every request with 401 (Basic).
class UnauthorizedServer {
 public:
  UnauthorizedServer() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd_, 8) != 0)
      throw std::runtime_error("cannot start the test HTTP server");
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~UnauthorizedServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  int requests() const { return requests_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        pollfd q{c, POLLIN, 0};
        if (poll(&q, 1, 2000) <= 0) break;
        ssize_t n = read(c, buf, sizeof buf);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      ++requests_;
      const std::string resp =
          "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"salt\"\r\n"
          "Content-Length: 0\r\nConnection: close\r\n\r\n";
      (void)!write(c, resp.data(), resp.size());
      close(c);
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

class AuthTest : public GitFixture {};

TEST_F(AuthTest, RemoteDemandingAPasswordFailsAsAuthentication) {
  auto repo = init_repo(work);
  write(work / "a.txt", "a\n");
  commit_all(repo.get(), "c");
  UnauthorizedServer server;
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/salt.git";
  add_remote(repo.get(), "origin", url);
  auto r = Repository::open(work);
  std::string msg;
  try {
    tag_and_push(r, "run_1");
  } catch (const InputError& e) {
    msg = e.what();
  }
  RecordProperty("message", msg);
  EXPECT_NE(msg.find("authentication to remote 'origin' (" + url + ") failed"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  EXPECT_GE(server.requests(), 1);
  EXPECT_LE(server.requests(), kMaxCredentialCalls + 1) << "no retry loop";
  git_reference* ref = nullptr;
  EXPECT_EQ(git_reference_lookup(&ref, repo.get(), "refs/tags/run_1"), GIT_ENOTFOUND);
  git_reference_free(ref);
}

}  // namespace
}  // namespace salt::repro::testing
