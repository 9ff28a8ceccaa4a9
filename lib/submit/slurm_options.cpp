#include "submit/slurm_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "core/errors.h"
#include "submit/option_checks.h"

namespace salt::submit {
namespace {

// salt's argparse short options that CLI11 cannot declare (more than one letter).
const std::map<std::string, std::string> kSlurmAliases{
    {"-cn", "--constraint"}, {"-gt", "--gpu_type"}, {"-cpt", "--cpus_per_task"}, {"-ex", "--exclusive"},
    {"-ti", "--time"},       {"-sls", "--salt_log_suffix"}, {"-rpg", "--runs_per_gpu"}};

struct SlurmCounted {
  CLI::Option* nodes = nullptr;
  CLI::Option* gpus = nullptr;
  CLI::Option* cpus = nullptr;
  int nodes_v = 1, gpus_v = 1, cpus_v = 1;
};

std::unique_ptr<CLI::App> make_slurm_app(SlurmOptions& o, SlurmCounted& c) {
  auto app = std::make_unique<CLI::App>(
      "Submit `salt fit` to Slurm. Every run's config is composed and validated (files opened, model built) "
      "before the job script is written to slurm/batch/sbatch_<tag>.sh; logs go to slurm/batch_logs/.\n"
      "Extra #SBATCH lines: --slurm.KEY=VALUE. Extra salt flags: --config.KEY=VALUE.",
      "salt submit_slurm");
  app->add_option("-c,--config", o.configs, "Config file(s) for `salt fit`, merged in order (repeatable).")
      ->required();
  app->add_option("-t,--tag", o.tag, "Job name; the script is slurm/batch/sbatch_<tag>.sh.")->capture_default_str();
  app->add_option("-p,--partition", o.partition, "Slurm partition.");
  app->add_option("--constraint", o.constraint, "(-cn) Constraint on the requested nodes.");
  app->add_option("-a,--account", o.account, "Slurm account.");
  app->add_option("-q,--qos", o.qos, "Quality of service.");
  c.nodes = app->add_option("-n,--nodes", c.nodes_v, "Nodes (= trainer.num_nodes; default: the config's).");
  c.gpus = app->add_option("-g,--gpus_per_node", c.gpus_v,
                           "GPUs per node = tasks per node = trainer.devices (default: the config's, else 1); "
                           "0: a CPU job.");
  app->add_flag("--cpu", o.request.cpu, "A CPU job: no GPUs requested, trainer.accelerator=cpu (= -g 0).");
  app->add_option("--gpu_type", o.gpu_type, "(-gt) GPU type, e.g. v100; empty: any.");
  c.cpus = app->add_option("--cpus_per_task", c.cpus_v,
                           "(-cpt) CPUs per task = data.num_workers (default: the config's).");
  app->add_option("-m,--memory", o.memory, "Memory per node (--mem), e.g. 100G (K, M, G, T); 'none' leaves it out.")
      ->capture_default_str();
  app->add_flag("--exclusive", o.exclusive, "(-ex) Exclusive use of the nodes.");
  app->add_option("--time", o.time, "(-ti) Time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS.");
  app->add_flag("-f,--force", o.force, "Pass --force to salt (train from a dirty git tree).");
  app->add_flag("-r,--requeue", o.requeue,
                "Requeue before the time limit: salt saves a checkpoint on --signal and the job resumes from it.");
  app->add_option("-s,--signal", o.signal,
                  "SIGNAL@SECONDS: the signal (name or number) and seconds before the time limit, for --requeue.")
      ->capture_default_str();
  app->add_option("--salt_log_suffix", o.salt_log_suffix,
                  "(-sls) Run directory suffix: logs/<name>_<suffix> (default: a timestamp; fixed with --requeue).");
  app->add_option("--sweep", o.sweep, "YAML file with a 'grid' and/or 'list' of config overrides: one job array.");
  app->add_option("--runs_per_gpu", o.runs_per_gpu, "(-rpg) Sweep runs packed on one GPU (one array task each).")
      ->capture_default_str();
  app->add_flag("--dry-run,--dry_run", o.dry_run, "Validate and print the job script (and sweep runs); submit nothing.");
  add_environment_options(*app, o.env, "Singularity image (-e singularity).",
                          "Singularity bind mounts, e.g. /data:/inputs (repeatable).");
  return app;
}

}  // namespace

SlurmOptions parse_slurm_options(const std::vector<std::string>& args) {
  SlurmOptions o;
  auto split = split_args(args, kSlurmAliases, "slurm");
  o.slurm_extra = split.batch;
  o.config_extra = split.config;
  if (wants_help(split.args)) {
    o.help = true;
    return o;
  }
  SlurmCounted c;
  auto app = make_slurm_app(o, c);
  parse_with(*app, split.args, "submit_slurm");
  check_slurm_memory("-m/--memory", o.memory);
  if (!o.time.empty()) check_slurm_time("-ti/--time", o.time);
  parse_signal(o.signal);
  if (c.nodes->count()) o.request.nodes = c.nodes_v;
  if (c.gpus->count()) o.request.gpus_per_node = c.gpus_v;
  if (c.cpus->count()) o.request.cpus_per_task = c.cpus_v;
  default_salt_binary(o.env);
  return o;
}

std::string slurm_help() {
  SlurmOptions o;
  SlurmCounted c;
  return make_slurm_app(o, c)->help();
}

}  // namespace salt::submit
