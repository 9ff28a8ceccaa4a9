#include "submit/slurm_script.h"

#include <algorithm>
#include <sstream>

#include "submit/shell_quote.h"

namespace salt::submit {

void set_directive(std::vector<Directive>& directives, const std::string& key, std::optional<std::string> value) {
  for (auto& d : directives)
    if (d.first == key) {
      d.second = std::move(value);
      return;
    }
  directives.emplace_back(key, std::move(value));
}

namespace {

// Waits for one background process: a trapped signal interrupts `wait`, so wait
// again while it runs; the last `wait` on an exited child returns its real status.
constexpr const char* kWaitFunction = R"(wait_for() {
  while :; do
    wait "$1" && return 0
    kill -0 "$1" 2>/dev/null || { wait "$1"; return $?; }
  done
}
)";

void write_header(std::ostream& out, const SlurmJob& job) {
  out << "#!/bin/bash\n"
      << "# salt-cpp Slurm job '" << job.tag << "', written by `salt submit_slurm`.\n"
      << "# Submit it again with: sbatch " << shell_quote(job.workdir + "/slurm/batch/sbatch_" + job.tag + ".sh")
      << "\n";
  for (const auto& [key, value] : job.directives)
    out << "#SBATCH --" << key << (value ? "=" + *value : "") << "\n";
  out << "\n";
}

void write_preamble(std::ostream& out, const SlurmJob& job) {
  out << "cd " << shell_quote(job.workdir) << " || exit 1\n";
  // GPU jobs: salt's setting. CPU jobs: torch computes with the task's CPUs.
  out << (job.gpus ? "export OMP_NUM_THREADS=1\n" : "export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}\n");
  out << "echo \"salt job ${SLURM_JOB_ID:-?} on $(hostname): restart ${SLURM_RESTART_COUNT:-0}, "
         "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}, $(date +%T)\"\n";
  out << environment_setup(job.env);
  out << kWaitFunction << "\n";
}

// The salt command of one run: srun makes each task a rank (SLURM_PROCID, ...).
std::string salt_command(const SlurmJob& job, bool srun, bool requeue_by_script, const std::string& run_args) {
  std::string cmd;
  // Packed runs requeue once from this script, after all have saved: salt itself
  // must not (the first requeue would kill the others mid-save).
  if (requeue_by_script) cmd += "env -u SLURM_JOB_ID ";
  if (srun) cmd += "srun --kill-on-bad-exit=1 ";
  cmd += shell_join(salt_launcher(job.env, job.gpus, job.workdir)) + " fit " + shell_join(job.common_args);
  if (!run_args.empty()) cmd += " " + run_args;
  return cmd;
}

void write_trap(std::ostream& out, const SlurmJob& job) {
  if (!job.requeue) return;
  const bool number = job.signal_name.find_first_not_of("0123456789") == std::string::npos;
  const std::string signal = number ? "signal " + job.signal_name : "SIG" + job.signal_name;
  out << "# Slurm sends " << signal << " to this shell before the time limit (--signal=B:...);\n"
      << "# salt then saves ckpts/requeue.ckpt and exits, and the requeued job resumes from it.\n"
      << "got_signal=0\n"
      << "trap 'got_signal=1; echo \"salt job: " << signal
      << " received at $(date +%T), asking salt to save a requeue checkpoint\"; kill -USR1 \"${pids[@]}\" 2>/dev/null' "
      << job.signal_name << "\n";
}

void write_wait(std::ostream& out, const SlurmJob& job, bool packed) {
  out << "status=0\n"
      << "for pid in \"${pids[@]}\"; do wait_for \"$pid\" || status=$?; done\n";
  if (job.requeue && packed) {
    out << "if [ \"$got_signal\" = 1 ]; then\n"
        << "  for dir in \"${my_dirs[@]}\"; do\n"
        << "    if [ -e \"$dir/ckpts/requeue.ckpt\" ]; then\n"
        << "      echo \"salt job: requeueing ${SLURM_JOB_ID}\"; scontrol requeue \"$SLURM_JOB_ID\"; break\n"
        << "    fi\n"
        << "  done\n"
        << "fi\n";
  }
  out << "echo \"salt job: finished with status $status\"\n"
      << "exit $status\n";
}

void write_single(std::ostream& out, const SlurmJob& job) {
  out << "pids=()\n";
  write_trap(out, job);
  out << salt_command(job, true, false, shell_join(job.run_args)) << " &\n"
      << "pids+=($!)\n";
  write_wait(out, job, false);
}

void write_sweep(std::ostream& out, const SlurmJob& job) {
  const bool packed = job.runs_per_task > 1;
  out << "# One array task runs " << job.runs_per_task << " of the " << job.num_runs
      << " runs; line i+1 of the runs file holds run i's flags.\n"
      << "runs_file=" << shell_quote(job.runs_file) << "\n"
      << "runs_per_task=" << job.runs_per_task << "\n"
      << "num_runs=" << job.num_runs << "\n";
  if (job.requeue && packed) {
    out << "run_dirs=(";
    for (const auto& d : job.run_dirs) out << (&d == &job.run_dirs.front() ? "" : " ") << shell_quote(d);
    out << ")\n";
  }
  out << "pids=()\nmy_dirs=()\n";
  write_trap(out, job);
  out << "first=$((SLURM_ARRAY_TASK_ID * runs_per_task))\n"
      << "for ((i = first; i < first + runs_per_task && i < num_runs; i++)); do\n"
      << "  line=$(sed -n \"$((i + 1))p\" \"$runs_file\")\n"
      << "  eval \"run_args=($line)\"\n"
      << "  echo \"salt job: run $i: $line\"\n";
  if (packed) {
    // Several salt processes share the task's GPU; each logs to its own file.
    out << "  " << salt_command(job, false, job.requeue, "\"${run_args[@]}\"") << " >> "
        << shell_quote(job.log_dir) << "/" << shell_quote(job.tag) << "_run$i.out 2>&1 &\n";
    if (job.requeue) out << "  my_dirs+=(\"${run_dirs[$i]}\")\n";
  } else {
    out << "  " << salt_command(job, true, false, "\"${run_args[@]}\"") << " &\n";
  }
  out << "  pids+=($!)\n"
      << "done\n";
  write_wait(out, job, packed);
}

}  // namespace

std::string render_slurm_script(const SlurmJob& job) {
  std::ostringstream out;
  write_header(out, job);
  write_preamble(out, job);
  if (job.sweep) write_sweep(out, job);
  else write_single(out, job);
  return out.str();
}

}  // namespace salt::submit
