#include "parallel/local_launch.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "core/errors.h"
#include "core/signals.h"
#include "parallel/free_port.h"
#include "parallel/line_forwarder.h"

extern char** environ;

namespace salt::parallel {
namespace {

// Signals reach the poll loop through a pipe (the only safe thing a handler can do).
int g_wake_write = -1;

extern "C" void on_launcher_signal(int sig) {
  const int saved = errno;
  const char byte = static_cast<char>(sig);
  if (g_wake_write >= 0) (void)!::write(g_wake_write, &byte, 1);
  errno = saved;
}

class SignalRouting {
 public:
  SignalRouting() {
    if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) throw InputError("cannot create a pipe for the workers' signals");
    g_wake_write = fds_[1];
    struct sigaction sa {};
    sa.sa_handler = on_launcher_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], &sa, &previous_[i]);
  }
  ~SignalRouting() {
    for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], &previous_[i], nullptr);
    g_wake_write = -1;
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  int read_fd() const { return fds_[0]; }
  std::vector<int> drain() const {
    std::vector<int> sigs;
    char buf[64];
    for (ssize_t n; (n = ::read(fds_[0], buf, sizeof buf)) > 0;)
      for (ssize_t i = 0; i < n; ++i) sigs.push_back(buf[i]);
    return sigs;
  }

 private:
  static constexpr int kCount = 4;
  static constexpr int kSignals[kCount] = {SIGCHLD, SIGINT, SIGTERM, SIGUSR1};
  int fds_[2] = {-1, -1};
  struct sigaction previous_[kCount];
};

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;
  std::unique_ptr<LineForwarder> out, err;
  bool running = true;
  int status = 0;
};

// The whole environment for a worker, built before fork (only async-signal-safe
// calls are allowed between fork and exec in a threaded process).
std::vector<std::string> worker_environment(const LocalLaunchOptions& o, int rank, int port, int threads) {
  std::vector<std::string> overrides{"RANK=" + std::to_string(rank),
                                     "LOCAL_RANK=" + std::to_string(rank),
                                     "WORLD_SIZE=" + std::to_string(o.num_processes),
                                     "LOCAL_WORLD_SIZE=" + std::to_string(o.num_processes),
                                     "MASTER_ADDR=127.0.0.1",
                                     "MASTER_PORT=" + std::to_string(port)};
  auto key = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  if (threads > 0) overrides.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
  for (const auto& kv : o.extra_env) {  // the caller's settings win
    overrides.erase(std::remove_if(overrides.begin(), overrides.end(), [&](const std::string& x) { return key(x) == key(kv); }),
                    overrides.end());
    overrides.push_back(kv);
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    bool replaced = false;
    for (const auto& o2 : overrides) replaced = replaced || key(o2) == key(kv);
    if (!replaced) env.push_back(kv);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

void start_worker(Worker& w, const LocalLaunchOptions& o, const std::vector<std::string>& env) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw InputError(std::string("cannot create pipes for worker processes: ") + std::strerror(errno));
  std::vector<char*> argv{const_cast<char*>(o.program.c_str())};
  for (const auto& a : o.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& kv : env) envp.push_back(const_cast<char*>(kv.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) throw InputError(std::string("cannot start worker processes: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);                      // Ctrl-C at a terminal reaches the launcher only
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);   // the launcher died: stop too
    if (::getppid() != parent) ::_exit(1);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGUSR1}) ::signal(sig, SIG_DFL);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(o.program.c_str(), argv.data(), envp.data());
    const char msg[] = "salt: error: cannot start the worker program\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  w.pid = pid;
  w.out_fd = out[0];
  w.err_fd = err[0];
  const std::string prefix = "[rank " + std::to_string(w.rank) + "] ";
  w.out = std::make_unique<LineForwarder>(prefix, stdout);
  w.err = std::make_unique<LineForwarder>(prefix, stderr);
}

// Reads what is there; closes the fd at EOF (-1).
void pump(int& fd, LineForwarder& fwd) {
  char buf[8192];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    fwd.feed(buf, static_cast<std::size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    fwd.finish();
    ::close(fd);
    fd = -1;
  }
}

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

std::string failure_message(const Worker& w) {
  // A worker that died from a signal printed nothing about it: only a real error line helps.
  std::string line = w.err->error_line();
  if (line.empty() && !WIFSIGNALED(w.status)) line = w.err->last_line();
  for (const char* p : {"salt: error: ", "salt: "})
    if (line.rfind(p, 0) == 0) {
      line.erase(0, std::strlen(p));
      break;
    }
  std::string msg = "rank " + std::to_string(w.rank);
  if (WIFSIGNALED(w.status)) {
    msg += " was killed by signal " + std::to_string(WTERMSIG(w.status)) + " (" + strsignal(WTERMSIG(w.status)) + ")";
    if (!line.empty()) msg += "; its last output: " + line;
  } else {
    msg += " failed (exit code " + std::to_string(WEXITSTATUS(w.status)) + ")";
    if (!line.empty()) msg += ": " + line;
  }
  return msg + "; the other ranks were stopped";
}

}  // namespace

int run_local_workers(const LocalLaunchOptions& o) {
  if (o.num_processes < 1) throw UsageError("the number of worker processes must be at least 1");
  const int port = o.port > 0 ? o.port : free_local_port();
  int threads = 0;
  if (!std::getenv("OMP_NUM_THREADS")) {
    threads = o.threads_per_process > 0 ? o.threads_per_process
                                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / o.num_processes);
  }
  spdlog::info("starting {} processes on this machine (MASTER_PORT={}{})", o.num_processes, port,
               threads > 0 ? ", OMP_NUM_THREADS=" + std::to_string(threads) + " each" : std::string());

  SignalRouting signals;
  std::vector<Worker> workers(static_cast<std::size_t>(o.num_processes));
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> kill_at;  // SIGKILL the rest then
  std::optional<std::size_t> failed;         // the rank whose failure ended the run
  int forwarded_stop = 0;
  bool forwarded_usr1 = false, stopped_by_usr1 = false;

  auto terminate_others = [&](int sig) {
    for (auto& w : workers)
      if (w.running && w.pid > 0) ::kill(w.pid, sig);
    if (!kill_at) kill_at = Clock::now() + o.grace;
  };

  try {
    for (int r = 0; r < o.num_processes; ++r) {
      workers[static_cast<std::size_t>(r)].rank = r;
      start_worker(workers[static_cast<std::size_t>(r)], o, worker_environment(o, r, port, threads));
    }
  } catch (...) {
    terminate_others(SIGKILL);
    for (auto& w : workers)
      if (w.pid > 0) ::waitpid(w.pid, nullptr, 0);
    throw;
  }

  auto any_open = [&] {
    for (auto& w : workers)
      if (w.running || w.out_fd >= 0 || w.err_fd >= 0) return true;
    return false;
  };
  while (any_open()) {
    std::vector<pollfd> fds{{signals.read_fd(), POLLIN, 0}};
    std::vector<std::pair<Worker*, bool>> owners{{nullptr, false}};
    for (auto& w : workers) {
      if (w.out_fd >= 0) fds.push_back({w.out_fd, POLLIN, 0}), owners.emplace_back(&w, false);
      if (w.err_fd >= 0) fds.push_back({w.err_fd, POLLIN, 0}), owners.emplace_back(&w, true);
    }
    ::poll(fds.data(), fds.size(), 100);

    for (int sig : signals.drain()) {
      if (sig == SIGCHLD) continue;
      spdlog::warn("launcher: forwarding signal {} ({}) to the workers", sig, strsignal(sig));
      for (auto& w : workers)
        if (w.running) ::kill(w.pid, sig);
      if (sig == SIGUSR1) forwarded_usr1 = true;
      if (sig != SIGUSR1) {
        forwarded_stop = sig;
        if (!kill_at) kill_at = Clock::now() + o.grace + std::chrono::seconds(20);  // time to reach a step boundary
      }
    }
    for (std::size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        auto* w = owners[i].first;
        if (owners[i].second) pump(w->err_fd, *w->err);
        else pump(w->out_fd, *w->out);
      }

    // Reap; among workers that ended in the same pass, one killed by a signal (the
    // cause) wins over one that failed because its peer vanished.
    std::optional<std::size_t> first_bad;
    for (auto& w : workers) {
      if (!w.running || ::waitpid(w.pid, &w.status, WNOHANG) != w.pid) continue;
      w.running = false;
      const bool ok = WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0;
      // A worker saved by a forwarded SIGUSR1 and not requeued by Slurm exits 128 + SIGUSR1.
      const bool saved_for_requeue = forwarded_usr1 && exit_code_of(w.status) == 128 + SIGUSR1;
      if (saved_for_requeue) stopped_by_usr1 = true;
      const bool stopped_by_us = ((failed || forwarded_stop) && exit_code_of(w.status) != 0) || saved_for_requeue;
      if (ok || stopped_by_us || failed) continue;
      const auto idx = static_cast<std::size_t>(w.rank);
      if (!first_bad || (WIFSIGNALED(w.status) && !WIFSIGNALED(workers[*first_bad].status))) first_bad = idx;
    }
    if (first_bad && !failed) {
      failed = first_bad;
      terminate_others(SIGTERM);
    }
    if (kill_at && Clock::now() > *kill_at) {
      for (auto& w : workers)
        if (w.running) ::kill(w.pid, SIGKILL);
      kill_at = Clock::now() + std::chrono::hours(1);
    }
  }

  if (failed) {
    const auto& w = workers[*failed];
    throw UserError(failure_message(w), exit_code_of(w.status));
  }
  if (forwarded_stop) throw StopRequested{forwarded_stop};
  if (stopped_by_usr1) throw StopRequested{SIGUSR1};
  return 0;
}

}  // namespace salt::parallel
