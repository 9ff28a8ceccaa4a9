// Running the batch system's submit command (sbatch, condor_submit) and keeping
// what it printed: the job id is in there.
#pragma once
#include <string>
#include <vector>

namespace salt::submit {

struct CommandOutput {
  int exit_code = -1;  // 127: not found on PATH
  std::string output;  // stdout and stderr together
};

// Runs argv (looked up on PATH) and waits for it.
CommandOutput run_command(const std::vector<std::string>& argv);

}  // namespace salt::submit
