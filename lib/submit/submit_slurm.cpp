#include "submit/submit_slurm.h"

#include <sys/stat.h>

#include <iostream>
#include <regex>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/run_command.h"
#include "submit/shell_quote.h"
#include "submit/sweep.h"
#include "training/loop/run_dir.h"

namespace salt::submit {
namespace fs = std::filesystem;

std::vector<Directive> slurm_directives(const SlurmOptions& o, const Resources& r, const fs::path& log_dir,
                                        int array_size) {
  std::vector<Directive> d;
  auto add = [&d](const std::string& k, std::optional<std::string> v) { set_directive(d, k, std::move(v)); };
  add("job-name", o.tag);
  if (!o.partition.empty()) add("partition", o.partition);
  if (!o.constraint.empty()) add("constraint", o.constraint);
  if (!o.account.empty()) add("account", o.account);
  if (!o.qos.empty()) add("qos", o.qos);
  add("nodes", std::to_string(r.nodes));
  if (r.gpus_per_node > 0)
    add("gres", "gpu:" + (o.gpu_type.empty() ? "" : o.gpu_type + ":") + std::to_string(r.gpus_per_node));
  add("ntasks-per-node", std::to_string(r.tasks_per_node()));
  add("cpus-per-task", std::to_string(r.cpus_per_task));
  if (!o.memory.empty() && o.memory != "none") add("mem", o.memory);
  if (o.exclusive) add("exclusive", std::nullopt);
  add("export", "ALL");
  const std::string pattern = array_size > 0 ? "slurm-%A_%a" : "slurm-%j";
  add("output", (log_dir / (pattern + ".out")).string());
  add("error", (log_dir / (pattern + ".err")).string());
  if (!o.time.empty()) add("time", o.time);
  if (o.requeue) {
    add("requeue", std::nullopt);
    // B: the batch shell gets it and forwards it to salt (see the trap in the script).
    const auto sig = parse_signal(o.signal);
    add("signal", "B:" + sig.name + "@" + std::to_string(sig.seconds));
    add("open-mode", "append");  // the requeued run appends to the same log
  }
  if (array_size > 0) add("array", "0-" + std::to_string(array_size - 1));
  for (const auto& p : o.slurm_extra) add(p.key, p.value);
  return d;
}

std::optional<std::string> parse_sbatch_job_id(const std::string& output) {
  static const std::regex re(R"(Submitted batch job ([0-9]+))");
  std::smatch m;
  if (std::regex_search(output, m, re)) return m[1].str();
  return std::nullopt;
}

SlurmSubmission prepare_slurm_job(const SlurmOptions& o, const fs::path& workdir) {
  check_environment(o.env);
  if (o.tag.empty() || o.tag.find('/') != std::string::npos)
    throw UsageError("--tag '" + o.tag + "': must be a non-empty name without '/'");
  parse_signal(o.signal);
  if (o.runs_per_gpu < 1) throw UsageError("--runs_per_gpu must be at least 1");
  if (o.runs_per_gpu > 1 && o.sweep.empty()) throw UsageError("--runs_per_gpu packs the runs of a --sweep; add --sweep");

  PlanInput in;
  in.configs = o.configs;
  in.passthrough = o.config_extra;
  if (!o.sweep.empty()) in.sweep = load_sweep(o.sweep);
  in.request = o.request;
  in.force = o.force;
  in.fixed_run_dir = o.requeue;
  if (!o.salt_log_suffix.empty()) in.log_suffix = o.salt_log_suffix;
  in.tag = o.tag;
  in.default_suffix = training::timestamp_now();

  SlurmSubmission s;
  s.plan = make_plan(in);
  const auto& r = s.plan.resources;
  if (o.runs_per_gpu > 1 && (r.gpus_per_node > 1 || r.nodes > 1))
    throw UsageError("--runs_per_gpu packs single-device runs; it needs --gpus_per_node 1 (or a CPU job) and --nodes 1");

  const fs::path batch_dir = workdir / "slurm" / "batch";
  s.log_dir = workdir / "slurm" / "batch_logs";
  s.script = batch_dir / ("sbatch_" + o.tag + ".sh");
  const bool sweep = !o.sweep.empty();
  const int num_runs = static_cast<int>(s.plan.runs.size());
  if (sweep) {
    s.runs_file = batch_dir / ("sweep_" + o.tag + ".txt");
    s.array_size = (num_runs + o.runs_per_gpu - 1) / o.runs_per_gpu;
    for (const auto& run : s.plan.runs) s.runs_text += shell_join(run.args) + "\n";
  }

  auto& job = s.job;
  job.tag = o.tag;
  job.directives = slurm_directives(o, r, s.log_dir, s.array_size);
  job.workdir = workdir.string();
  job.env = o.env;
  job.gpus = r.gpus_per_node > 0;
  job.common_args = s.plan.common_args;
  job.sweep = sweep;
  if (!sweep) job.run_args = s.plan.runs.front().args;
  job.runs_file = s.runs_file.string();
  job.num_runs = num_runs;
  job.runs_per_task = o.runs_per_gpu;
  for (const auto& run : s.plan.runs) job.run_dirs.push_back(run.run_dir.string());
  job.requeue = o.requeue;
  if (o.requeue) job.signal_name = parse_signal(o.signal).name;
  job.log_dir = s.log_dir.string();
  s.script_text = render_slurm_script(job);
  return s;
}

namespace {

void print_runs(const SlurmSubmission& s, std::ostream& out) {
  for (std::size_t i = 0; i < s.plan.runs.size(); ++i) {
    out << "  run " << i;
    if (s.array_size > 0) out << " (array task " << i / static_cast<std::size_t>(s.job.runs_per_task) << ")";
    if (!s.plan.runs[i].run_dir.empty()) out << " -> " << s.plan.runs[i].run_dir.string();
    out << ": " << shell_join(s.plan.runs[i].args) << "\n";
  }
}

}  // namespace

int submit_slurm(const SlurmOptions& o, std::ostream& out) {
  const auto workdir = fs::current_path();
  auto s = prepare_slurm_job(o, workdir);
  for (const auto& note : s.plan.notes) out << "note: " << note << "\n";
  out << "validated " << s.plan.runs.size() << " run(s): configs compose, data files open, the model builds\n";
  if (s.array_size > 0) {
    out << "sweep: " << s.plan.runs.size() << " runs in a job array of " << s.array_size << " task(s)";
    if (s.job.runs_per_task > 1) out << ", " << s.job.runs_per_task << " runs per task";
    out << "\n";
    print_runs(s, out);
  }
  if (o.dry_run) {
    out << "dry run: would write " << s.script.string() << ":\n\n" << s.script_text;
    if (s.array_size > 0) out << "\nand " << s.runs_file.string() << ":\n\n" << s.runs_text;
    return 0;
  }

  fs::create_directories(s.script.parent_path());
  fs::create_directories(s.log_dir);
  if (s.array_size > 0) write_file_atomic(s.runs_file, s.runs_text);
  write_file_atomic(s.script, s.script_text);
  fs::permissions(s.script, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
  out << "wrote " << s.script.string() << (s.array_size > 0 ? " and " + s.runs_file.string() : "") << "\n";

  auto r = run_command({"sbatch", s.script.string()});
  if (r.exit_code == 127)
    throw InputError("sbatch not found on PATH; the job script is " + s.script.string() + " (submit it with sbatch)");
  if (r.exit_code != 0)
    throw InputError("sbatch " + s.script.string() + " failed (exit " + std::to_string(r.exit_code) +
                     "): " + std::regex_replace(r.output, std::regex("\\s+$"), ""));
  auto id = parse_sbatch_job_id(r.output);
  if (!id) {
    out << r.output << "submitted " << s.script.string() << " (no job id in sbatch's output)\n";
    return 0;
  }
  out << "submitted job " << *id << ": " << s.script.string() << "\n";
  const auto stem = s.array_size > 0 ? "slurm-" + *id + "_<task>" : "slurm-" + *id;
  out << "logs: " << (s.log_dir / (stem + ".out")).string() << " and .err\n";
  if (s.job.runs_per_task > 1) out << "      each run: " << (s.log_dir / (o.tag + "_run<i>.out")).string() << "\n";
  return 0;
}

}  // namespace salt::submit
