// `salt submit_htcondor`: salt's submit_htcondor.py (-c, -t, -e) with the job's
// resources as flags instead of edits to the script. Validates the run like
// submit_slurm, writes condor/batch/batch_<tag>.sh and .job, and runs
// condor_submit (from PATH) on the .job file.
#pragma once
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "submit/arg_prepass.h"
#include "submit/environment.h"
#include "submit/run_plan.h"

namespace salt::submit {

struct CondorOptions {
  std::vector<std::string> configs;
  std::string tag = "salt_job";
  Environment env;
  ResourceRequest request;       // gpus_per_node <- --gpus, cpus_per_task <- --cpus; one machine
  std::string memory = "80000";  // request_memory: MiB, or with a unit ("80 GB")
  long runtime = 82800;          // seconds: +MaxRuntime and +RequestRuntime (23 h, as salt)
  std::string jobflavour, project, requirements, salt_log_suffix;
  bool force = false, dry_run = false, help = false;
  std::vector<Passthrough> condor_extra;  // --condor.key=value: extra submit-file lines
  std::vector<Passthrough> config_extra;  // --config.key=value: extra salt flags
};

CondorOptions parse_condor_options(const std::vector<std::string>& args);
std::string condor_help();

struct CondorSubmission {
  Plan plan;
  std::filesystem::path script, job_file, log_dir;
  std::string script_text, job_text;
};

CondorSubmission prepare_condor_job(const CondorOptions& options, const std::filesystem::path& workdir);

// The cluster id in condor_submit's "1 job(s) submitted to cluster 123.", if any.
std::optional<std::string> parse_condor_cluster(const std::string& output);

int submit_htcondor(const CondorOptions& options, std::ostream& out);

}  // namespace salt::submit
