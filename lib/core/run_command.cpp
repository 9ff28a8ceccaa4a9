#include "core/run_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "core/errors.h"

namespace salt {

CommandOutput run_command(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe(fds) != 0) throw InputError("cannot create a pipe to run " + argv.at(0));
  pid_t pid = fork();
  if (pid < 0) throw InputError("cannot start " + argv.at(0));
  if (pid == 0) {
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
  CommandOutput result;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) result.output.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace salt
