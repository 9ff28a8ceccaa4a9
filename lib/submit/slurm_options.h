// `salt submit_slurm`'s command line: salt's submit_slurm.py options, plus CPU
// jobs, sweeps and --dry-run. The multi-letter short options and the
// --slurm.* / --config.* passthroughs go through split_args first.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "submit/arg_prepass.h"
#include "submit/environment.h"
#include "submit/run_plan.h"

namespace salt::submit {

struct SlurmOptions {
  std::vector<std::string> configs;
  std::string tag = "salt_job";
  // Empty: not given.
  std::string partition, constraint, account, qos, time, salt_log_suffix, sweep, gpu_type;
  std::string memory = "100G";  // per node; "none" leaves it to the cluster
  ResourceRequest request;
  Environment env;
  bool exclusive = false, force = false, requeue = false, dry_run = false;
  std::string signal = "SIGUSR1@90";
  int runs_per_gpu = 1;
  std::vector<Passthrough> slurm_extra;   // --slurm.key=value
  std::vector<Passthrough> config_extra;  // --config.key=value
  bool help = false;
};

// Throws UsageError for a bad option. `--help` sets help.
SlurmOptions parse_slurm_options(const std::vector<std::string>& args);
std::string slurm_help();

}  // namespace salt::submit
