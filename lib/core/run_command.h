// Running a helper program and keeping what it printed: the batch system's submit
// commands (sbatch, condor_submit: the job id is in there), Node for ONNX Runtime.
#pragma once
#include <string>
#include <vector>

namespace salt {

struct CommandOutput {
  int exit_code = -1;  // 127: not found on PATH
  std::string output;  // stdout and stderr together
};

struct CommandOptions {
  // The child lives no longer than salt: it runs in its own process group (a
  // terminal's Ctrl-C reaches salt only, which decides), is killed with its group
  // when SIGINT/SIGTERM/SIGHUP arrive (with install_stop_handlers; run_command then
  // throws StopRequested), and by the kernel when salt itself dies, SIGKILL included
  // (PR_SET_PDEATHSIG; the kernel ties it to the calling thread, so call from one
  // that outlives the child, e.g. the main thread). For helpers whose work is
  // worthless once salt is gone (the ONNX Runtime check); not for submit commands,
  // which must not be cut halfway.
  bool stop_with_salt = false;
};

// Runs argv (looked up on PATH) and waits for it.
CommandOutput run_command(const std::vector<std::string>& argv, const CommandOptions& options = {});

}  // namespace salt
