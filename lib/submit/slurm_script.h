// The Slurm job script: #SBATCH directives, then bash that runs `salt fit` under
// srun (one task per GPU, so each task is a rank with SLURM_PROCID), forwards
// the pre-timeout signal to salt for requeue, and for sweeps picks its runs
// from the runs file by SLURM_ARRAY_TASK_ID. Pure text: unit-tested without Slurm.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "submit/environment.h"
#include "submit/option_checks.h"  // parse_signal

namespace salt::submit {

// An #SBATCH line: --key=value, or --key alone.
using Directive = std::pair<std::string, std::optional<std::string>>;

// Sets `key` (replacing an earlier value in place) or appends it.
void set_directive(std::vector<Directive>& directives, const std::string& key, std::optional<std::string> value);

struct SlurmJob {
  std::string tag;
  std::vector<Directive> directives;
  std::string workdir;                   // absolute; the job cds here (relative config paths)
  Environment env;
  bool gpus = true;                      // false: CPU job (no --nv, OMP threads = CPUs per task)
  std::vector<std::string> common_args;  // `salt fit` flags of every run
  // A single run: its own flags. A sweep: the runs file, one line of flags per run.
  std::vector<std::string> run_args;
  bool sweep = false;
  std::string runs_file;
  int num_runs = 1;
  int runs_per_task = 1;                 // --runs_per_gpu: salt processes per array task
  std::vector<std::string> run_dirs;     // per run; packed requeue checks them
  bool requeue = false;
  std::string signal_name = "USR1";     // parse_signal's name: USR1, or a number
  std::string log_dir;                   // packed runs log to <log_dir>/<tag>_run<i>.out
};

std::string render_slurm_script(const SlurmJob& job);

}  // namespace salt::submit
