#include "core/run_command.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "core/errors.h"
#include "core/memory_limit.h"
#include "core/signals.h"

namespace salt {
namespace {

// In the forked child, before exec: its own process group, and SIGKILL when the
// parent dies (checked once more after prctl, in case the parent died before it).
void tie_to_parent(pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
}

// Kills the child's whole process group (Node's helpers with it) and reaps it.
[[noreturn]] void stop_child(pid_t pid, int sig) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);  // in case the child had not yet made its own group
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  throw StopRequested{sig};
}

int wait_for(pid_t pid, bool stoppable) {
  int status = 0;
  if (int sig = stoppable ? stop_signal() : 0) stop_child(pid, sig);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    if (int sig = stoppable ? stop_signal() : 0) stop_child(pid, sig);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

CommandOutput run_command(const std::vector<std::string>& argv, const CommandOptions& options) {
  int fds[2];
  if (pipe(fds) != 0) throw InputError("cannot create a pipe to run " + argv.at(0));
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw InputError("cannot start " + argv.at(0));
  if (pid == 0) {
    if (options.stop_with_salt) tie_to_parent(parent);
    restore_data_limit_in_child();
    // salt ignores these (cli_main.cpp); an ignored signal stays ignored across exec.
    std::signal(SIGPIPE, SIG_DFL);
    std::signal(SIGXFSZ, SIG_DFL);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  if (options.stop_with_salt) setpgid(pid, pid);  // also here: no window in which a kill of the group misses it
  CommandOutput result;
  char buf[4096];
  // A stoppable wait looks at the stop flag at least every 100 ms: a signal that
  // lands just before poll() would otherwise wait for the child's next output.
  pollfd readable{fds[0], POLLIN, 0};
  for (;;) {
    if (int sig = options.stop_with_salt ? stop_signal() : 0) {
      close(fds[0]);
      stop_child(pid, sig);
    }
    if (options.stop_with_salt) {
      const int ready = poll(&readable, 1, 100);
      if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
    }
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) result.output.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  close(fds[0]);
  result.exit_code = wait_for(pid, options.stop_with_salt);
  return result;
}

}  // namespace salt
