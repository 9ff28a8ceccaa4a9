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

// Runs argv (looked up on PATH) and waits for it.
CommandOutput run_command(const std::vector<std::string>& argv);

}  // namespace salt
