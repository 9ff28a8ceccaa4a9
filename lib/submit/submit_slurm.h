// `salt submit_slurm`: validate every run, write the job script (and a sweep's
// runs file), submit it with sbatch and say where the logs go. prepare_* writes
// nothing, so a typo fails before slurm/ exists.
#pragma once
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

#include "submit/run_plan.h"
#include "submit/slurm_options.h"
#include "submit/slurm_script.h"

namespace salt::submit {

struct SlurmSubmission {
  Plan plan;
  SlurmJob job;
  std::filesystem::path script;     // <workdir>/slurm/batch/sbatch_<tag>.sh
  std::filesystem::path runs_file;  // <workdir>/slurm/batch/sweep_<tag>.txt (sweeps)
  std::filesystem::path log_dir;    // <workdir>/slurm/batch_logs
  std::string script_text;
  std::string runs_text;
  int array_size = 0;               // 0: not a job array
};

// Everything but the writing: options -> validated plan -> script text.
SlurmSubmission prepare_slurm_job(const SlurmOptions& options, const std::filesystem::path& workdir);

// The #SBATCH lines for `options` and the agreed resources (before passthroughs).
std::vector<Directive> slurm_directives(const SlurmOptions& options, const Resources& resources,
                                        const std::filesystem::path& log_dir, int array_size);

// The job id in sbatch's "Submitted batch job 123", if any.
std::optional<std::string> parse_sbatch_job_id(const std::string& output);

// The whole command: prints to `out`, returns the exit code. Throws UserError.
int submit_slurm(const SlurmOptions& options, std::ostream& out);

}  // namespace salt::submit
