#include "submit/submit_htcondor.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <regex>
#include <sstream>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "submit/option_checks.h"
#include "core/run_command.h"
#include "submit/shell_quote.h"

namespace salt::submit {
namespace fs = std::filesystem;

namespace {

const std::map<std::string, std::string> kCondorAliases{{"-sls", "--salt_log_suffix"}};

struct CondorCounted {
  CLI::Option* gpus = nullptr;
  CLI::Option* cpus = nullptr;
  int gpus_v = 1, cpus_v = 1;
};

std::unique_ptr<CLI::App> make_condor_app(CondorOptions& o, CondorCounted& c) {
  auto app = std::make_unique<CLI::App>(
      "Submit `salt fit` to HTCondor. The run's config is composed and validated before condor/batch/batch_<tag>.sh "
      "and .job are written; logs go to condor/batch_logs/.\n"
      "Extra submit-file lines: --condor.KEY=VALUE. Extra salt flags: --config.KEY=VALUE.",
      "salt submit_htcondor");
  app->add_option("-c,--config", o.configs, "Config file(s) for `salt fit`, merged in order (repeatable).")->required();
  app->add_option("-t,--tag", o.tag, "Job name; the files are condor/batch/batch_<tag>.sh/.job.")->capture_default_str();
  c.gpus = app->add_option("--gpus", c.gpus_v, "request_GPUs = trainer.devices (default: the config's, else 1); 0: CPU.");
  app->add_flag("--cpu", o.request.cpu, "A CPU job: no GPUs, trainer.accelerator=cpu (= --gpus 0).");
  c.cpus = app->add_option("--cpus", c.cpus_v, "request_CPUs = data.num_workers (default: the config's).");
  app->add_option("--memory", o.memory, "request_memory: MiB, or with a unit KB, MB, GB, TB ('80 GB').")
      ->capture_default_str();
  app->add_option("--runtime", o.runtime, "Seconds: +MaxRuntime and +RequestRuntime.")->capture_default_str();
  app->add_option("--jobflavour", o.jobflavour, "+JobFlavour (CERN), e.g. tomorrow.");
  app->add_option("--project", o.project, "+MyProject.");
  app->add_option("--requirements", o.requirements, "Requirements expression.");
  app->add_flag("-f,--force", o.force, "Pass --force to salt (train from a dirty git tree).");
  app->add_option("--salt_log_suffix", o.salt_log_suffix, "(-sls) Run directory suffix: logs/<name>_<suffix>.");
  app->add_flag("--dry-run,--dry_run", o.dry_run, "Validate and print the files; submit nothing.");
  add_environment_options(*app, o.env, "Singularity image (-e singularity): +MySingularityImage.",
                          "Singularity bind mounts (+MySingularityArgs).");
  return app;
}

std::string condor_string(const std::string& s) { return "\"" + std::regex_replace(s, std::regex("\""), "\"\"") + "\""; }

}  // namespace

CondorOptions parse_condor_options(const std::vector<std::string>& args) {
  CondorOptions o;
  auto split = split_args(args, kCondorAliases, "condor");
  o.condor_extra = split.batch;
  o.config_extra = split.config;
  if (wants_help(split.args)) {
    o.help = true;
    return o;
  }
  CondorCounted c;
  auto app = make_condor_app(o, c);
  parse_with(*app, split.args, "submit_htcondor");
  check_condor_memory("--memory", o.memory);
  o.request.multi_node = false;
  if (c.gpus->count()) o.request.gpus_per_node = c.gpus_v;
  if (c.cpus->count()) o.request.cpus_per_task = c.cpus_v;
  default_salt_binary(o.env);
  return o;
}

std::string condor_help() {
  CondorOptions o;
  CondorCounted c;
  return make_condor_app(o, c)->help();
}

CondorSubmission prepare_condor_job(const CondorOptions& o, const fs::path& workdir) {
  check_environment(o.env);
  if (o.tag.empty() || o.tag.find('/') != std::string::npos)
    throw UsageError("--tag '" + o.tag + "': must be a non-empty name without '/'");
  if (o.runtime <= 0) throw UsageError("--runtime must be a positive number of seconds");
  PlanInput in;
  in.configs = o.configs;
  in.passthrough = o.config_extra;
  in.request = o.request;
  in.request.multi_node = false;
  in.request.gpus_option = "--gpus";
  in.request.cpus_option = "--cpus";
  in.force = o.force;
  if (!o.salt_log_suffix.empty()) in.log_suffix = o.salt_log_suffix;
  in.tag = o.tag;

  CondorSubmission s;
  s.plan = make_plan(in);
  const auto& r = s.plan.resources;
  const fs::path batch_dir = workdir / "condor" / "batch";
  s.log_dir = workdir / "condor" / "batch_logs";
  s.script = batch_dir / ("batch_" + o.tag + ".sh");
  s.job_file = batch_dir / ("batch_" + o.tag + ".job");

  // HTCondor starts the container itself (+MySingularityImage), so the script runs salt directly.
  Environment env = o.env;
  if (env.kind == "singularity") env.kind = "local";
  std::ostringstream sh;
  sh << "#!/bin/bash\n"
     << "# salt-cpp HTCondor job '" << o.tag << "', written by `salt submit_htcondor`.\n"
     << "cd " << shell_quote(workdir.string()) << " || exit 1\n"
     << (r.gpus_per_node > 0 ? "export OMP_NUM_THREADS=1\n" : "export OMP_NUM_THREADS=" + std::to_string(r.cpus_per_task) + "\n")
     << "echo \"salt job on $(hostname): CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}\"\n"
     << environment_setup(env) << "exec " << shell_join(salt_launcher(env, false, workdir.string())) << " fit "
     << shell_join(s.plan.common_args);
  if (!s.plan.runs.front().args.empty()) sh << " " << shell_join(s.plan.runs.front().args);
  sh << "\n";
  s.script_text = sh.str();

  std::ostringstream job;
  auto line = [&job](const std::string& key, const std::string& value) { job << key << " = " << value << "\n"; };
  job << "# salt-cpp HTCondor job '" << o.tag << "', written by `salt submit_htcondor`.\n";
  line("Universe", "vanilla");
  line("Executable", s.script.string());
  line("Output", (s.log_dir / ("stdout_" + o.tag + "_$(ClusterId).txt")).string());
  line("Error", (s.log_dir / ("stderr_" + o.tag + "_$(ClusterId).txt")).string());
  line("Log", (s.log_dir / ("batch_" + o.tag + "_$(ClusterId).log")).string());
  if (r.gpus_per_node > 0) line("request_GPUs", std::to_string(r.gpus_per_node));
  line("request_CPUs", std::to_string(r.cpus_per_task));
  line("request_memory", o.memory);
  line("+MaxRuntime", std::to_string(o.runtime));
  line("+RequestRuntime", std::to_string(o.runtime));
  if (!o.jobflavour.empty()) line("+JobFlavour", condor_string(o.jobflavour));
  if (!o.project.empty()) line("+MyProject", condor_string(o.project));
  if (!o.requirements.empty()) line("Requirements", o.requirements);
  if (o.env.kind == "singularity") {
    line("+MySingularityImage", condor_string(o.env.image));
    std::string args = r.gpus_per_node > 0 ? "--nv" : "";
    for (const auto& b : o.env.binds) args += (args.empty() ? "" : " ") + std::string("--bind ") + b;
    if (!args.empty()) line("+MySingularityArgs", condor_string(args));
  }
  for (const auto& p : o.condor_extra) line(p.key, p.value.value_or("true"));
  job << "\nqueue\n";
  s.job_text = job.str();
  return s;
}

std::optional<std::string> parse_condor_cluster(const std::string& output) {
  static const std::regex re(R"(submitted to cluster ([0-9]+))");
  std::smatch m;
  if (std::regex_search(output, m, re)) return m[1].str();
  return std::nullopt;
}

int submit_htcondor(const CondorOptions& o, std::ostream& out) {
  const auto workdir = fs::current_path();
  auto s = prepare_condor_job(o, workdir);
  for (const auto& note : s.plan.notes) out << "note: " << note << "\n";
  out << "validated the run: configs compose, data files open, the model builds\n";
  if (o.dry_run) {
    out << "dry run: would write " << s.script.string() << ":\n\n"
        << s.script_text << "\nand " << s.job_file.string() << ":\n\n"
        << s.job_text;
    return 0;
  }
  fs::create_directories(s.script.parent_path());
  fs::create_directories(s.log_dir);
  write_file_atomic(s.script, s.script_text);
  fs::permissions(s.script, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
  write_file_atomic(s.job_file, s.job_text);
  out << "wrote " << s.script.string() << " and " << s.job_file.string() << "\n";

  auto r = run_command({"condor_submit", s.job_file.string()});
  if (r.exit_code == 127)
    throw InputError("condor_submit not found on PATH; the job file is " + s.job_file.string());
  if (r.exit_code != 0)
    throw InputError("condor_submit " + s.job_file.string() + " failed (exit " + std::to_string(r.exit_code) +
                     "): " + std::regex_replace(r.output, std::regex("\\s+$"), ""));
  auto id = parse_condor_cluster(r.output);
  out << "submitted " << (id ? "cluster " + *id : std::string("the job")) << ": " << s.job_file.string() << "\n";
  const std::string cluster = id ? *id : "<cluster>";
  out << "logs: " << (s.log_dir / ("stdout_" + o.tag + "_" + cluster + ".txt")).string() << ", stderr_"
      << o.tag << "_" << cluster << ".txt, batch_" << o.tag << "_" << cluster << ".log\n";
  return 0;
}

}  // namespace salt::submit
