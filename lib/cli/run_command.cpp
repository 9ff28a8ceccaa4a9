#include <spdlog/spdlog.h>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "core/env_switches.h"
#include "cli/commands.h"
#include "cli/git_checks.h"
#include "config/compose.h"
#include "config/config_edit.h"
#include "config/run_args.h"
#include "core/errors.h"
#include "core/memory.h"
#include "core/omp_spin.h"
#include "core/signals.h"
#include "parallel/backends.h"
#include "parallel/launch_env.h"
#include "parallel/local_launch.h"
#include "training/loop/mup_shapes.h"
#include "training/checkpoints/checkpoint.h"
#include "training/checkpoints/checkpoint_config.h"
#include "training/loop/evaluate.h"
#include "training/loop/fit.h"
#include "training/step/threads.h"

namespace salt::cli {

namespace {

// `trainer.devices: [0, 0]`: processes that share a card (a test of the multi-process
// path on a one-card machine, or small models packed onto one card).
bool shares_a_card(const config::TrainerConfig& trainer) {
  if (trainer.accelerator == "cpu") return false;
  std::set<int> ids(trainer.device_ids.begin(), trainer.device_ids.end());
  return ids.size() < trainer.device_ids.size();
}

// Processes sharing a card average their gradients over Gloo (NCCL refuses two ranks
// on one device): the workers get SALT_DIST_BACKEND=gloo unless the user set it. A
// build without Gloo says so before any worker starts (each would stop with it, after
// loading its data).
void share_cards_over_gloo(const config::TrainerConfig& trainer, parallel::LocalLaunchOptions& options) {
  if (!shares_a_card(trainer)) return;
  if (!parallel::built_backends().gloo)
    throw UsageError(parallel::no_gloo_message("trainer.devices naming a card more than once (several processes on "
                                           "one card, which NCCL refuses)"));
  if (env_value("SALT_DIST_BACKEND")) return;
  spdlog::info("trainer.devices gives one card to several processes: their gradients are averaged over Gloo "
               "(NCCL takes one process per card)");
  options.add_env("SALT_DIST_BACKEND=gloo");
}

// `salt fit --trainer.devices N` with no launcher around it: this process starts the
// N workers itself (same command) and supervises them. Returns nullopt when this
// process should train itself (one device, or a launcher already set it up).
std::optional<int> launch_local_workers(const std::string& command, const std::vector<std::string>& args,
                                        const config::TrainerConfig& trainer) {
  if (command != "fit") return std::nullopt;
  if (trainer.num_devices * trainer.num_nodes <= 1) return std::nullopt;
  if (parallel::launched_externally(parallel::read_dist_env(parallel::process_environment()))) return std::nullopt;
  if (trainer.num_nodes > 1)
    throw UsageError("trainer.num_nodes=" + std::to_string(trainer.num_nodes) +
                     " needs a launcher that starts the processes on every node (srun under Slurm, or torchrun-style "
                     "variables); see docs/distributed.md");
  parallel::check_data_parallel_switches(parallel::process_environment());
  std::vector<std::string> worker_args{command};
  worker_args.insert(worker_args.end(), args.begin(), args.end());
  auto options = parallel::LocalLaunchOptions().set_args(worker_args).set_num_processes(trainer.num_devices);
  share_cards_over_gloo(trainer, options);
  return parallel::run_local_workers(options);
}

// salt test/validate without --ckpt_path (salt's get_best_epoch): the best
// checkpoint in the ckpts/ beside the one config file given, not under the
// config's trainer.default_root_dir, so a run moved or copied elsewhere tests its
// own checkpoints. With several config files, default_root_dir decides.
void default_checkpoint_beside_config(const config::RunArgs& args, config::ResolvedConfig& resolved) {
  if (resolved.run.ckpt_path) return;
  std::vector<std::string> files;
  for (const auto& op : args.ops)
    if (op.kind == config::ConfigOp::Kind::kMergeFile) files.push_back(op.target);
  if (files.size() != 1) return;
  const auto ckpt_dir = std::filesystem::path(files[0]).parent_path() / "ckpts";
  if (!std::filesystem::is_directory(ckpt_dir)) return;
  spdlog::info("no --ckpt_path: looking for the best checkpoint in {}", ckpt_dir.string());
  const auto best = training::best_checkpoint(ckpt_dir).string();
  config::apply_edit(resolved, config::ConfigEdit::set_ckpt_path(best));
}

// salt test/validate/predict given --ckpt_path and no config file: the checkpoint's
// config (training::CheckpointConfig). It goes first, so the command line still
// overrides it.
void config_for_lone_checkpoint(const std::string& command, config::RunArgs& run,
                                std::optional<training::CheckpointConfig>& from_checkpoint) {
  if (command != "test" && command != "validate" && command != "predict") return;
  std::optional<std::string> ckpt;
  for (const auto& op : run.ops) {
    if (op.kind == config::ConfigOp::Kind::kMergeFile) return;
    if (op.kind == config::ConfigOp::Kind::kSet && op.target == "ckpt_path") ckpt = op.value;
  }
  if (!ckpt || ckpt->empty() || *ckpt == "null") return;
  if (std::filesystem::exists(*ckpt)) training::require_checkpoint_file(*ckpt, command + ": --ckpt_path");
  run.ops.insert(run.ops.begin(), from_checkpoint.emplace(command, *ckpt).merge_op());
}

}  // namespace

int run_config_command(const std::string& command, const std::vector<std::string>& args) {
  auto run = config::parse_run_args(command, args);
  if (run.help) {
    std::cout << config::run_help(command);
    return 0;
  }
  std::optional<training::CheckpointConfig> from_checkpoint;
  config_for_lone_checkpoint(command, run, from_checkpoint);
  auto resolved = config::resolve(config::find_base_config(), run.ops);
  for (const auto& w : resolved.warnings) spdlog::warn("{}", w);
  if (run.print_config) {
    std::cout << config::to_yaml(resolved.config);
    return 0;
  }
  if (command == "mup") {
    training::write_mup_shapes(resolved);
    return 0;
  }
  // The switches, read once: a mistyped one (OMP_NUM_THREADS, SALT_*) is refused
  // before workers start.
  const auto options = training::read_step_options();
  // A directory is said to be one before a run directory or worker exists (a missing
  // file is said where it is read, after the config's own checks).
  if (resolved.run.ckpt_path && std::filesystem::exists(*resolved.run.ckpt_path))
    training::require_checkpoint_file(*resolved.run.ckpt_path, command + ": ckpt_path");
  if (auto code = launch_local_workers(command, args, resolved.run.trainer)) return *code;
  install_stop_handlers();
  const auto threads = training::configure_torch_threads(resolved.run.trainer, options.threads);
  keep_freed_memory();
  // CPU bf16, for the process (fit sets it again when built); the other switches go
  // down to the step: test and validate pass them on (evaluate, validate_checkpoint).
  training::apply_process_options(options);
  const bool short_spin = options.gomp_spin.source == training::OptionSource::kDefault &&
                          options.gomp_spin.value == kShortSpinCount;
  spdlog::info("computing with {} CPU thread(s): {}{}{}", threads.threads, threads.why,
               threads.why == "OMP_NUM_THREADS" ? "" : " (OMP_NUM_THREADS sets another count)",
               short_spin ? "; idle OpenMP threads sleep after GOMP_SPINCOUNT=10000 spins, beside OpenBLAS's threads "
                            "(OPENBLAS_THREAD_TIMEOUT=" + options.openblas_thread_timeout.value + ")"
                          : "");
  if (command == "fit") {
    training::FitHooks hooks;
    const auto& run = resolved.run;
    hooks.before_start = [&run, threads](const std::filesystem::path& run_dir) {
      GitCheckOptions git;
      git.force = run.force;
      git.tag = run.tag;
      git.logs_root = run_dir.parent_path();
      auto meta = check_git_and_tag(run_dir, git);
      meta["compute_threads"] = threads.threads;  // metadata.yaml: how the run computed, and why
      meta["compute_threads_why"] = threads.why;
      return meta;
    };
    auto result = training::fit(resolved, hooks, options);
    if (result.requeued && !result.requeue_submitted) {
      // Saved mid-epoch, not finished, and nobody will restart it: the exit code and
      // line of any other stop signal (the warning before says how to resume).
      throw StopRequested{SIGUSR1};
    }
    if (result.requeued) {
      if (result.rank == 0) spdlog::info("requeued: {} (the job resumes from ckpts/requeue.ckpt)", result.run_dir.string());
    } else if (!result.run_dir.empty() && result.rank == 0) {
      spdlog::info("finished: {}", result.run_dir.string());
    }
    return 0;
  }
  if (command != "fit") default_checkpoint_beside_config(run, resolved);
  if (command == "test" || command == "predict") {
    training::evaluate(resolved, options);
    return 0;
  }
  if (command == "validate") {
    training::validate_checkpoint(resolved, options);
    return 0;
  }
  throw UsageError("unknown command 'salt " + command + "'");
}

}  // namespace salt::cli
