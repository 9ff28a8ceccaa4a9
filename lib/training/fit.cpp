#include "training/fit.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "config/compose.h"
#include "core/errors.h"
#include "core/signals.h"
#include "core/torch_compat.h"
#include "data/loader.h"
#include "data/temp_copy.h"
#include "models/summary.h"
#include "training/checkpoint.h"
#include "training/device.h"
#include "training/metrics_log.h"
#include "training/optimization.h"
#include "training/progress.h"
#include "training/rng_state.h"
#include "training/run_dir.h"
#include "training/run_files.h"
#include "training/run_setup.h"

namespace salt::training {
namespace fs = std::filesystem;

namespace {

Batch to_device(Batch batch, const torch::Device& device) {
  if (device.is_cpu()) return batch;
  for (auto& [k, t] : batch.inputs) t = t.to(device, /*non_blocking=*/true);
  for (auto& [k, t] : batch.pad_masks) t = t.to(device, true);
  for (auto& [input, labels] : batch.labels)
    for (auto& [k, t] : labels) t = t.to(device, true);
  return batch;
}

// Sums of per-task losses weighted by batch size, for epoch means.
struct LossTotals {
  std::map<std::string, double> sums;
  double jets = 0;
  void add(const models::ModelOutput& out, int64_t jets_in_batch) {
    const double w = static_cast<double>(jets_in_batch);
    sums["loss"] += out.loss.item<double>() * w;
    for (const auto& [task, loss] : out.losses) sums[task + "_loss"] += loss.item<double>() * w;
    jets += w;
  }
  std::map<std::string, double> means(const std::string& stage) const {
    std::map<std::string, double> m;
    for (const auto& [k, v] : sums) m[stage + "/" + k] = jets > 0 ? v / jets : NAN;
    return m;
  }
};

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

void save_requeue_checkpoint(const fs::path& run_dir, const RunSetup& setup, Optimization& optimization,
                             int64_t epoch, int64_t batch_in_epoch, int64_t global_step, int64_t total_steps) {
  CheckpointState state;
  state.epoch = epoch;
  state.batch_in_epoch = batch_in_epoch;
  state.global_step = global_step;
  state.config_yaml = config::to_yaml(setup.config);
  state.state_dict = module_state(*setup.model);
  state.adam_state = adam_state(optimization);
  state.scheduler_total_steps = total_steps;
  state.cpu_rng_state = cpu_rng_state();
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

}  // namespace

FitResult fit(const YAML::Node& resolved_config, const FitHooks& hooks) {
  auto setup = prepare_run(resolved_config, Stage::kFit);
  const auto& T = setup.trainer;
  const auto& D = setup.data;
  const bool dev_run = T.fast_dev_run > 0;
  if (T.num_devices * T.num_nodes > 1)
    throw UsageError("trainer.devices=" + std::to_string(T.num_devices) + " x num_nodes=" + std::to_string(T.num_nodes) +
                     ": training on several devices is not available in this build yet; use --trainer.devices=1");
  const auto device = select_device(T);
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

  fs::path run_dir;
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
  std::optional<CheckpointState> resume;
  std::string resume_source;
  const auto ckpt_node = setup.config["ckpt_path"];
  const bool same_dir_resume = !dev_run && fs::exists(run_dir / "ckpts" / kRequeueCheckpoint);
  if (ckpt_node && !ckpt_node.IsNull()) resume_source = ckpt_node.as<std::string>();
  else if (same_dir_resume) resume_source = (run_dir / "ckpts" / kRequeueCheckpoint).string();
  if (!resume_source.empty()) {
    resume = load_checkpoint(resume_source);
    load_module_state(*setup.model, resume->state_dict, resume_source);
    spdlog::info("resuming from {} (epoch {}, step {})", resume_source, resume->epoch, resume->global_step);
  }
  YAML::Node git_meta;
  if (!dev_run && hooks.before_start) git_meta = hooks.before_start(run_dir);

  setup.model->to(device);
  const int64_t per_epoch_available = data::BatchSampler(data::SamplerOptions::training(
                                          train_reader->num_rows(), D.batch_size, setup.seed)).batches_per_epoch();
  int64_t train_batches = dev_run ? std::min(T.fast_dev_run, per_epoch_available) : T.limit_train.apply(per_epoch_available);
  if (train_batches <= 0)
    throw UsageError("no training batches: " + std::to_string(train_reader->num_rows()) + " training jets with batch_size " +
                     std::to_string(D.batch_size) + " (the partial last batch is dropped)");
  const int64_t steps_per_epoch = (train_batches + T.accumulate_grad_batches - 1) / T.accumulate_grad_batches;
  const int64_t max_epochs = dev_run ? 1 : T.max_epochs;
  int64_t total_steps = max_epochs > 0 ? steps_per_epoch * max_epochs : T.max_steps;
  if (T.max_steps > 0 && !dev_run) total_steps = std::min(total_steps, T.max_steps);
  if (resume && resume->scheduler_total_steps > 0) total_steps = resume->scheduler_total_steps;

  LrsConfig lrs;
  const auto l = setup.config["model"]["lrs_config"];
  lrs.initial = l["initial"].as<double>();
  lrs.max = l["max"].as<double>();
  lrs.end = l["end"].as<double>();
  lrs.pct_start = l["pct_start"].as<double>();
  lrs.weight_decay = l["weight_decay"].as<double>();
  lrs.last_epoch = l["last_epoch"].as<int64_t>();
  Optimization optimization(setup.model->parameters(), lrs, total_steps, resume ? resume->global_step : 0);
  if (resume) {
    load_adam_state(optimization, resume->adam_state, resume_source);
    if (resume->cpu_rng_state.defined()) set_cpu_rng_state(resume->cpu_rng_state);
  }

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
  auto counts = models::count_parameters(*setup.model);
  if (!dev_run) {
    RunInfo info{train_reader.get(), val_reader.get(), counts.trainable, device.is_cuda() ? 1 : 0, {}, timestamp_now(),
                 git_meta};
    if (device.is_cuda()) info.gpu_ids.push_back(device.index());
    write_run_files(run_dir, setup, info);
    spdlog::info("run directory: {}", run_dir.string());
  }
  if (T.enable_model_summary) std::fprintf(stderr, "%s", models::model_summary(*setup.model, T.summary_max_depth).c_str());

  data::LoaderOptions loader_options;
  loader_options.set_num_workers(D.num_workers)
      .set_prefetch_factor(D.prefetch_factor)
      .set_pin_memory(D.pin_memory && device.is_cuda())
      .set_persistent_workers(D.persistent_workers);
  data::Loader train_loader(train_reader, data::SamplerOptions::training(train_reader->num_rows(), D.batch_size, setup.seed),
                            loader_options);
  data::Loader val_loader(val_reader, data::SamplerOptions::evaluation(val_reader->num_rows(), D.batch_size), loader_options);
  const int64_t val_batches =
      dev_run ? std::min(T.fast_dev_run, val_loader.batches_per_epoch()) : T.limit_val.apply(val_loader.batches_per_epoch());

  MetricsLog metrics(dev_run ? fs::path() : run_dir / "metrics.csv");
  if (same_dir_resume) metrics.load_existing();
  Progress progress(T.enable_progress_bar, T.progress_refresh_rate);
  const bool autocast = T.precision != Precision::kFloat32;
  const auto autocast_dtype =
      device.is_cuda() && T.precision == Precision::kFloat16Mixed ? torch::kFloat16 : torch::kBFloat16;

  // A mid-epoch (requeue) checkpoint continues its epoch after the batches it had done.
  const bool mid_epoch = resume && resume->batch_in_epoch >= 0;
  int64_t start_epoch = resume ? (mid_epoch ? resume->epoch : resume->epoch + 1) : 0;
  int64_t skip_batches = mid_epoch ? resume->batch_in_epoch : 0;
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
    for (int64_t b = 0; b < train_batches; ++b) {
      check_stop();
      auto batch = train_loader.next();
      if (!batch) break;
      if (b < skip_batches) continue;  // done before the requeue: same batch order, so skip them
      auto on_device = to_device(std::move(*batch), device);
      models::ModelOutput out;
      {
        std::optional<compat::AutocastGuard> guard;
        if (autocast) guard.emplace(device.type(), autocast_dtype);
        out = setup.model->forward(on_device, true);
      }
      const double loss_value = out.loss.item<double>();
      if (!std::isfinite(loss_value)) throw InputError(nan_message("train/loss", epoch, global_step, run_dir));
      (out.loss / static_cast<double>(T.accumulate_grad_batches)).backward();
      interval.add(out, on_device.size);
      result.train_jets += on_device.size;
      const bool boundary = (b + 1) % T.accumulate_grad_batches == 0 || b + 1 == train_batches;
      if (boundary) {
        if (T.gradient_clip_val) {
          if (T.gradient_clip_algorithm == "value")
            torch::nn::utils::clip_grad_value_(setup.model->parameters(), *T.gradient_clip_val);
          else
            torch::nn::utils::clip_grad_norm_(setup.model->parameters(), *T.gradient_clip_val);
        }
        const double lr = optimization.current_lr();
        optimization.step();
        optimization.zero_grad();
        ++global_step;
        if (global_step % T.log_every_n_steps == 0) {
          auto m = interval.means("train");
          m["lr-AdamW"] = lr;
          metrics.log(epoch, global_step, m);
          interval = LossTotals{};
        }
        if (T.max_steps > 0 && global_step >= T.max_steps) stop = true;
        if (!dev_run && take_requeue_request()) {
          save_requeue_checkpoint(run_dir, setup, optimization, epoch, b + 1, global_step, total_steps);
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
    setup.model->eval();
    torch::NoGradGuard no_grad;
    val_loader.start_epoch(epoch);
    progress.start("val", epoch, max_epochs, val_batches);
    LossTotals val;
    for (int64_t b = 0; b < val_batches; ++b) {
      check_stop();
      auto batch = val_loader.next();
      if (!batch) break;
      auto on_device = to_device(std::move(*batch), device);
      std::optional<compat::AutocastGuard> guard;
      if (autocast) guard.emplace(device.type(), autocast_dtype);
      auto out = setup.model->forward(on_device, true);
      val.add(out, on_device.size);
      progress.update(b, out.loss.item<double>(), on_device.size);
    }
    val_loader.stop();
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

    if (T.checkpoint_callback && T.enable_checkpointing) {
      CheckpointState state;
      state.epoch = epoch;
      state.global_step = global_step;
      state.config_yaml = config::to_yaml(setup.config);
      state.state_dict = module_state(*setup.model);
      state.adam_state = adam_state(optimization);
      state.scheduler_total_steps = total_steps;
      state.cpu_rng_state = cpu_rng_state();
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
    request_requeue();
  } else if (!dev_run) {
    std::error_code ec;  // finished: a later run in this directory must not resume from it
    fs::remove(run_dir / "ckpts" / kRequeueCheckpoint, ec);
  }
  return result;
}

}  // namespace salt::training
