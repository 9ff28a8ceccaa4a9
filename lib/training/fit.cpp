#include "training/fit.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <system_error>

#include "config/compose.h"
#include "core/errors.h"
#include "core/signals.h"
#include "core/torch_compat.h"
#include "data/loader.h"
#include "data/temp_copy.h"
#include "dist/session.h"
#include "models/summary.h"
#include "training/batch_device.h"
#include "training/checkpoint.h"
#include "training/device.h"
#include "training/metrics_log.h"
#include "training/optimization.h"
#include "training/progress.h"
#include "training/rng_state.h"
#include "training/run_dir.h"
#include "training/run_files.h"
#include "training/run_setup.h"
#include "training/validation.h"

namespace salt::training {
namespace fs = std::filesystem;

namespace {

std::string nan_message(const std::string& what, int64_t epoch, int64_t step, const fs::path& run_dir) {
  std::string msg = what + " is not finite at epoch " + std::to_string(epoch) + ", step " + std::to_string(step) +
                    "; training stopped (see docs/training.md, 'NaN losses': check inputs for NaN/inf, "
                    "lower lrs_config.max, or set trainer.gradient_clip_val)";
  if (!run_dir.empty()) msg += "; checkpoints so far are in " + (run_dir / "ckpts").string();
  return msg;
}

std::string checkpoint_name(int64_t epoch, const std::string& fname_string, double value) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "epoch=%03lld-%s=%.5f.ckpt", static_cast<long long>(epoch), fname_string.c_str(), value);
  return buf;
}

// The full training state at this point, as a checkpoint holds it.
CheckpointState capture_state(const RunSetup& setup, Optimization& optimization, int64_t epoch, int64_t global_step,
                              int64_t total_steps) {
  CheckpointState state;
  state.epoch = epoch;
  state.global_step = global_step;
  state.config_yaml = config::to_yaml(setup.config);
  state.state_dict = module_state(*setup.model);
  state.adam_state = adam_state(optimization);
  state.scheduler_total_steps = total_steps;
  state.cpu_rng_state = cpu_rng_state();
  return state;
}

void save_requeue_checkpoint(const fs::path& run_dir, const RunSetup& setup, Optimization& optimization,
                             int64_t epoch, int64_t batch_in_epoch, int64_t global_step, int64_t total_steps) {
  auto state = capture_state(setup, optimization, epoch, global_step, total_steps);
  state.batch_in_epoch = batch_in_epoch;
  auto path = run_dir / "ckpts" / kRequeueCheckpoint;
  fs::create_directories(path.parent_path());
  save_checkpoint(path, state, &optimization);
  spdlog::warn("SIGUSR1: saved {} at epoch {}, batch {} (step {})", path.string(), epoch, batch_in_epoch, global_step);
}

// Under Slurm, puts this job back in the queue; its next start resumes from the
// requeue checkpoint (same run directory: a fixed --log_suffix and -oc).
void request_requeue() {
  const char* job = std::getenv("SLURM_JOB_ID");
  if (!job || !*job) {
    spdlog::warn("not running under Slurm (no SLURM_JOB_ID): not requeued; rerun the same command to resume");
    return;
  }
  std::string command = std::string("scontrol requeue ") + job;
  spdlog::info("requeueing: {}", command);
  if (std::system(command.c_str()) != 0) spdlog::error("'{}' failed; resume by resubmitting the same job", command);
}

void check_stop() {
  if (int sig = stop_signal()) throw StopRequested{sig};
}

// Ranks other than 0 log warnings and errors only: one copy of every info line.
class QuietLogs {
 public:
  explicit QuietLogs(bool quiet) : previous_(spdlog::get_level()), quiet_(quiet) {
    if (quiet_) spdlog::set_level(spdlog::level::warn);
  }
  ~QuietLogs() {
    if (quiet_) spdlog::set_level(previous_);
  }

 private:
  spdlog::level::level_enum previous_;
  bool quiet_;
};

// The number of processes a checkpoint's run had (its saved trainer.devices x num_nodes).
int saved_world_size(const std::string& config_yaml) {
  try {
    auto t = YAML::Load(config_yaml)["trainer"];
    int devices = 1;
    if (t["devices"] && t["devices"].IsSequence()) devices = static_cast<int>(t["devices"].size());
    else if (t["devices"] && t["devices"].Scalar() != "auto") devices = t["devices"].as<int>();
    const int nodes = t["num_nodes"] ? t["num_nodes"].as<int>() : 1;
    return std::max(1, devices * nodes);
  } catch (const std::exception&) {
    return 1;
  }
}

// Removes a run directory that did not exist when the run started, if the run
// fails before its first optimizer step (config, data and git problems found
// late, e.g. a bad first batch). Later failures keep it: it holds metrics and
// checkpoints by then.
class RunDirCleanup {
 public:
  explicit RunDirCleanup(fs::path dir) : armed_(!dir.empty() && !fs::exists(dir)), dir_(std::move(dir)) {}
  RunDirCleanup(const RunDirCleanup&) = delete;
  RunDirCleanup& operator=(const RunDirCleanup&) = delete;
  ~RunDirCleanup() {
    if (!armed_ || std::uncaught_exceptions() == 0) return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void disarm() { armed_ = false; }

 private:
  bool armed_;
  fs::path dir_;
};

}  // namespace

FitResult fit(const YAML::Node& resolved_config, const FitHooks& hooks) {
  auto setup = prepare_run(resolved_config, Stage::kFit);
  const auto& T = setup.trainer;
  const auto& D = setup.data;
  const bool dev_run = T.fast_dev_run > 0;
  // Data parallel: a launcher (salt's own, torchrun-style, srun) says which rank this
  // is; devices x num_nodes must match the processes it started.
  const auto dist_env = dist::Session::environment_for(T.num_devices, T.num_nodes);
  const auto device = select_device(T, dist_env.local_rank);
  std::unique_ptr<dist::Session> session;
  if (dist_env.distributed()) session = dist::Session::join(dist_env, device);
  const int rank = session ? session->rank() : 0;
  const int world = session ? session->size() : 1;
  const bool main_rank = rank == 0;
  QuietLogs quiet(!main_rank);
  if (session) {
    spdlog::info("data parallel: {} processes ({}, master {}:{}), backend {}; global batch {} = {} x {}", world,
                 dist::launcher_name(dist_env.launcher), dist_env.master_addr, dist_env.master_port,
                 session->group().backend_name(), D.batch_size * world, D.batch_size, world);
    // A drawn seed (seed_everything: true) differs per process; the batch order must not.
    const auto seed = std::stoull(session->from_rank0("seed", "choose the seed", [&] { return std::to_string(setup.seed); }));
    if (seed != setup.seed) {
      setup.seed = seed;
      seed_everything(seed);
    }
  }
  if (T.precision == Precision::kFloat16Mixed && device.is_cpu())
    spdlog::warn("precision=16-mixed is not supported on CPU; using bf16-mixed instead (as salt does)");

  // Monitored metric must exist: val/loss or val/<task>_loss.
  std::vector<std::string> known{"val/loss"};
  for (const auto& task : setup.model->model->task_list()) known.push_back("val/" + task->name() + "_loss");
  if (T.checkpoint_callback && std::find(known.begin(), known.end(), T.monitor_loss) == known.end()) {
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw UsageError("salt.callbacks.Checkpoint monitor_loss '" + T.monitor_loss + "' is not a logged metric (" + list + ")");
  }

  // Open (and so validate) the data before anything is written.
  auto train_reader = open_reader(setup, D.train_file, D.num_train, "num_train");
  auto val_reader = open_reader(setup, D.val_file, D.num_val, "num_val");

  // Rank 0 names the run directory (timestamps differ between processes), decides
  // what to resume from and runs the git checks; the others follow its answer.
  fs::path run_dir;
  std::optional<CheckpointState> resume;
  std::string resume_source;
  bool same_dir_resume = false;
  YAML::Node git_meta;
  auto load_resume = [&] {
    if (resume_source.empty()) return;
    resume = load_checkpoint(resume_source);
    load_module_state(*setup.model, resume->state_dict, resume_source);
    spdlog::info("resuming from {} (epoch {}, step {})", resume_source, resume->epoch, resume->global_step);
  };
  auto decide_start = [&]() -> std::string {
    if (!dev_run) {
      std::optional<std::string> suffix;
      if (!setup.config["log_suffix"].IsNull()) suffix = setup.config["log_suffix"].as<std::string>();
      const auto name = setup.config["name"].as<std::string>();
      run_dir = run_directory(T.default_root_dir, name, suffix, timestamp_now());
      if (fs::exists(run_dir / "config.yaml") && !setup.config["overwrite_config"].as<bool>())
        throw UsageError((run_dir / "config.yaml").string() +
                         " already exists; use --overwrite_config (-oc) to reuse this run directory, or another --name/--log_suffix");
    }
    // Resume: an explicit --ckpt_path, else a requeue checkpoint left in this run directory.
    const auto ckpt_node = setup.config["ckpt_path"];
    same_dir_resume = !dev_run && fs::exists(run_dir / "ckpts" / kRequeueCheckpoint);
    if (ckpt_node && !ckpt_node.IsNull()) resume_source = ckpt_node.as<std::string>();
    else if (same_dir_resume) resume_source = (run_dir / "ckpts" / kRequeueCheckpoint).string();
    load_resume();
    return run_dir.string() + "\n" + resume_source + "\n" + (same_dir_resume ? "1" : "0");
  };
  if (!session) {
    decide_start();
  } else {
    const auto decided = session->from_rank0("start", "start the run", decide_start);
    if (!main_rank) {
      std::istringstream lines(decided);
      std::string dir, source, same;
      std::getline(lines, dir);
      std::getline(lines, source);
      std::getline(lines, same);
      run_dir = dir;
      resume_source = source;
      same_dir_resume = same == "1";
      load_resume();
    }
  }

  setup.model->to(device);
  std::unique_ptr<dist::GradSync> grad_sync;
  if (session) {
    dist::broadcast_module(session->group(), *setup.model);  // every rank starts from rank 0's weights
    grad_sync = session->gradient_sync(setup.model->parameters());
  }
  // Each rank takes every world-th batch of the same seeded order (see data.md).
  const auto train_sampler =
      data::SamplerOptions::training(train_reader->num_rows(), D.batch_size, setup.seed).set_shard(rank, world);
  const int64_t per_epoch_available = data::BatchSampler(train_sampler).batches_per_epoch();
  int64_t train_batches = dev_run ? std::min(T.fast_dev_run, per_epoch_available) : T.limit_train.apply(per_epoch_available);
  if (train_batches <= 0)
    throw UsageError("no training batches: " + std::to_string(train_reader->num_rows()) + " training jets with batch_size " +
                     std::to_string(D.batch_size) + (world > 1 ? " over " + std::to_string(world) + " processes" : "") +
                     " (the partial last batch is dropped)");
  // Steps per epoch are per rank: the global batch is batch_size x world size.
  const int64_t steps_per_epoch = (train_batches + T.accumulate_grad_batches - 1) / T.accumulate_grad_batches;
  const int64_t max_epochs = dev_run ? 1 : T.max_epochs;
  int64_t total_steps = max_epochs > 0 ? steps_per_epoch * max_epochs : T.max_steps;
  if (T.max_steps > 0 && !dev_run) total_steps = std::min(total_steps, T.max_steps);
  if (resume && resume->scheduler_total_steps > 0) {
    // The schedule continues where it was, so its plan cannot grow. torch (and salt)
    // would fail when stepping past it, possibly hours in; say so before training.
    const int64_t wanted = total_steps;
    total_steps = resume->scheduler_total_steps;
    const int64_t offset = setup.config["model"]["lrs_config"]["last_epoch"].as<int64_t>() + 1;
    if (wanted + offset > total_steps)
      throw UsageError("this run would take " + std::to_string(wanted) + " optimizer steps but the checkpoint's " +
                       "one-cycle schedule plans " + std::to_string(total_steps) + " (trainer.max_epochs/max_steps " +
                       "larger than the original run's); keep the original max_epochs, or set " +
                       "model.lrs_config.last_epoch to start the schedule later");
  }

  Optimization optimization(setup.model->parameters(), lrs_config_from_yaml(setup.config["model"]["lrs_config"]),
                            total_steps, resume ? resume->global_step : 0);
  if (resume) {
    load_adam_state(optimization, resume->adam_state, resume_source);
    if (resume->cpu_rng_state.defined()) set_cpu_rng_state(resume->cpu_rng_state);
  }

  // Every check that can refuse the run has passed: now the git checks (which may
  // create the run directory for uncommitted.patch, and push a tag) on rank 0. A
  // failure from here until the first optimizer step removes a run directory this
  // run created, so a start that fails leaves none behind.
  RunDirCleanup cleanup(main_rank && !dev_run ? run_dir : fs::path());
  auto git_checks = [&]() -> std::string {
    if (!dev_run && hooks.before_start) git_meta = hooks.before_start(run_dir);
    return "";
  };
  if (!session) git_checks();
  else session->from_rank0("git", "check the git working tree", git_checks);

  // Temp copies (not under fast_dev_run, like salt); removed on every way out.
  std::unique_ptr<data::TempCopies> temp;
  if (!dev_run && D.move_files_temp) {
    temp = std::make_unique<data::TempCopies>(*D.move_files_temp);
    spdlog::info("copying training files to {}", temp->dir().string());
    train_reader = open_reader(setup, temp->copy(D.train_file).string(), D.num_train, "num_train");
    val_reader = open_reader(setup, temp->copy(D.val_file).string(), D.num_val, "num_val");
  }

  FitResult result;
  result.run_dir = run_dir;
  result.rank = rank;
  result.world_size = world;
  auto counts = models::count_parameters(*setup.model);
  if (!dev_run && main_rank) {
    RunInfo info{train_reader.get(), val_reader.get(), counts.trainable, device.is_cuda() ? T.num_devices * T.num_nodes : 0,
                 {}, timestamp_now(), git_meta};
    if (device.is_cuda())
      for (int i = 0; i < T.num_devices; ++i)
        info.gpu_ids.push_back(T.device_ids.empty() ? i : T.device_ids[static_cast<std::size_t>(i)]);
    write_run_files(run_dir, setup, info);
    spdlog::info("run directory: {}", run_dir.string());
  }
  if (T.enable_model_summary && main_rank)
    std::fprintf(stderr, "%s", models::model_summary(*setup.model, T.summary_max_depth).c_str());

  data::LoaderOptions loader_options;
  loader_options.set_num_workers(D.num_workers)
      .set_prefetch_factor(D.prefetch_factor)
      .set_pin_memory(D.pin_memory && device.is_cuda())
      .set_persistent_workers(D.persistent_workers);
  data::Loader train_loader(train_reader, train_sampler, loader_options);
  data::Loader val_loader(val_reader, data::SamplerOptions::evaluation(val_reader->num_rows(), D.batch_size).set_shard(rank, world),
                          loader_options);
  const int64_t val_batches =
      dev_run ? std::min(T.fast_dev_run, val_loader.batches_per_epoch()) : T.limit_val.apply(val_loader.batches_per_epoch());

  MetricsLog metrics(dev_run || !main_rank ? fs::path() : run_dir / "metrics.csv");
  if (same_dir_resume && main_rank) metrics.load_existing();
  Progress progress(T.enable_progress_bar && main_rank, T.progress_refresh_rate);
  Autocast autocast;
  autocast.enabled = T.precision != Precision::kFloat32;
  autocast.dtype = device.is_cuda() && T.precision == Precision::kFloat16Mixed ? torch::kFloat16 : torch::kBFloat16;

  // A mid-epoch (requeue) checkpoint continues its epoch after the batches it had done.
  const bool mid_epoch = resume && resume->batch_in_epoch >= 0;
  int64_t start_epoch = resume ? (mid_epoch ? resume->epoch : resume->epoch + 1) : 0;
  int64_t skip_batches = mid_epoch ? resume->batch_in_epoch : 0;
  if (mid_epoch) {
    // batch_in_epoch counts the saving run's per-rank batches; with another world size
    // the same share of the epoch is skipped (the batches themselves differ a little).
    const int saved_world = saved_world_size(resume->config_yaml);
    if (saved_world != world) {
      skip_batches = skip_batches * saved_world / world;
      spdlog::warn("resuming mid-epoch with {} processes from a run with {}: skipping {} batches per process", world,
                   saved_world, skip_batches);
    }
  }
  int64_t global_step = optimization.steps_done();
  bool stop = false;
  for (int64_t epoch = start_epoch; (max_epochs < 0 || epoch < max_epochs) && !stop; ++epoch) {
    // ---- training ----
    setup.model->train();
    const auto train_start = std::chrono::steady_clock::now();
    train_loader.start_epoch(epoch);
    progress.start("train", epoch, max_epochs, train_batches);
    LossTotals interval;
    optimization.zero_grad();
    bool nan_pending = false;  // data parallel: a non-finite loss, reported at the step boundary
    for (int64_t b = 0; b < train_batches; ++b) {
      if (!session) check_stop();  // several ranks agree on stopping at step boundaries instead
      auto batch = train_loader.next();
      if (!batch) break;
      if (b < skip_batches) continue;  // done before the requeue: same batch order, so skip them
      auto on_device = batch_to_device(std::move(*batch), device);
      models::ModelOutput out;
      {
        std::optional<compat::AutocastGuard> guard;
        if (autocast.enabled) guard.emplace(device.type(), autocast.dtype);
        out = setup.model->forward(on_device, true);
      }
      const double loss_value = out.loss.item<double>();
      if (!std::isfinite(loss_value)) {
        if (!session) throw InputError(nan_message("train/loss", epoch, global_step, run_dir));
        nan_pending = true;
      }
      const bool boundary = (b + 1) % T.accumulate_grad_batches == 0 || b + 1 == train_batches;
      if (grad_sync) grad_sync->begin_backward(boundary);  // accumulation: reduce only at the step boundary
      (out.loss / static_cast<double>(T.accumulate_grad_batches)).backward();
      interval.add(out, on_device.size);
      result.train_jets += on_device.size;
      if (boundary) {
        bool requeue_now = !dev_run && take_requeue_request();
        if (session) {
          grad_sync->finish();  // every .grad is now the mean over ranks
          const auto flags = session->agree(nan_pending, stop_signal(), requeue_now);
          if (flags.nan_rank >= 0)
            throw InputError(nan_message("train/loss on rank " + std::to_string(flags.nan_rank), epoch, global_step, run_dir));
          if (flags.stop_signal) throw StopRequested{flags.stop_signal};
          requeue_now = flags.requeue && !dev_run;
        }
        if (T.gradient_clip_val) {
          if (T.gradient_clip_algorithm == "value")
            torch::nn::utils::clip_grad_value_(setup.model->parameters(), *T.gradient_clip_val);
          else
            torch::nn::utils::clip_grad_norm_(setup.model->parameters(), *T.gradient_clip_val);
        }
        const double lr = optimization.current_lr();
        optimization.step();
        cleanup.disarm();
        optimization.zero_grad();
        ++global_step;
        if (global_step % T.log_every_n_steps == 0) {
          auto m = interval.means("train");  // rank 0's batches, as Lightning logs without sync_dist
          m["lr-AdamW"] = lr;
          metrics.log(epoch, global_step, m);
          interval = LossTotals{};
        }
        if (T.max_steps > 0 && global_step >= T.max_steps) stop = true;
        if (requeue_now) {  // every rank stops here; rank 0 saves
          if (main_rank) save_requeue_checkpoint(run_dir, setup, optimization, epoch, b + 1, global_step, total_steps);
          result.requeued = true;
          stop = true;
        }
      }
      progress.update(b, loss_value, on_device.size);
      if (stop) break;
    }
    train_loader.stop();
    skip_batches = 0;
    result.train_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - train_start).count();
    progress.finish("step " + std::to_string(global_step));

    if (result.requeued) break;
    // ---- validation ----
    // limit_val_batches=0 turns validation (and so checkpointing) off, as in Lightning.
    if (val_batches == 0 || ((epoch + 1) % T.check_val_every_n_epoch != 0 && !stop && epoch + 1 != max_epochs)) {
      ++result.epochs_run;
      continue;
    }
    progress.start("val", epoch, max_epochs, val_batches);
    auto val = validation_pass(setup.model, val_loader, epoch, val_batches, device, autocast, &progress, !session);
    if (session) {
      // Jet-weighted means over all ranks' shards: sum the sums and the jet counts.
      std::vector<double> totals{val.jets};
      for (const auto& [k, v] : val.sums) totals.push_back(v);
      totals = session->sum(totals);
      val.jets = totals[0];
      std::size_t i = 1;
      for (auto& [k, v] : val.sums) v = totals[i++];
      if (const auto flags = session->agree(false, stop_signal(), false); flags.stop_signal)
        throw StopRequested{flags.stop_signal};
    }
    auto val_metrics = val.means("val");
    if (!std::isfinite(val_metrics["val/loss"])) throw InputError(nan_message("val/loss", epoch, global_step, run_dir));
    result.last_val_metrics = val_metrics;
    std::string summary;
    for (const auto& [k, v] : val_metrics) summary += (summary.empty() ? "" : ", ") + k + " " + std::to_string(v);
    progress.finish("validated");
    spdlog::info("epoch {} step {}: {}", epoch, global_step, summary);
    if (dev_run) {
      ++result.epochs_run;
      break;
    }
    metrics.log(epoch, global_step, val_metrics);
    metrics.flush();

    if (T.checkpoint_callback && T.enable_checkpointing && main_rank) {
      auto state = capture_state(setup, optimization, epoch, global_step, total_steps);
      for (const auto& [k, v] : val_metrics) state.metrics.emplace_back(k, v);
      auto path = run_dir / "ckpts" / checkpoint_name(epoch, T.checkpoint_fname_string, val_metrics[T.monitor_loss]);
      fs::create_directories(path.parent_path());
      save_checkpoint(path, state, &optimization);
      result.checkpoints.push_back(path);
    }
    ++result.epochs_run;
  }
  metrics.flush();
  result.global_step = global_step;
  if (result.requeued) {
    if (main_rank) request_requeue();
  } else if (!dev_run && main_rank) {
    std::error_code ec;  // finished: a later run in this directory must not resume from it
    fs::remove(run_dir / "ckpts" / kRequeueCheckpoint, ec);
  }
  if (result.train_seconds > 0)
    spdlog::info("trained {} jets in {:.2f} s: {:.0f} jets/s over {} process(es)", result.train_jets * world,
                 result.train_seconds, static_cast<double>(result.train_jets * world) / result.train_seconds, world);
  if (grad_sync && grad_sync->stats().steps > 0) {
    const auto& st = grad_sync->stats();
    spdlog::info("gradient sync: {} bucket(s), {} started during backward and {} after it, {:.2f} ms waiting per step",
                 grad_sync->num_buckets(), st.buckets_launched_in_backward, st.buckets_launched_after,
                 1000 * st.wait_seconds / static_cast<double>(st.steps));
  }
  if (session) session->group().barrier();  // rank 0's files are complete when any rank reports success
  return result;
}

}  // namespace salt::training
