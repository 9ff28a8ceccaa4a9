#include "training/loop/fit_start.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "config/compose.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "models/kernels/cpu_bf16.h"
#include "models/summary.h"
#include "parallel/session.h"
#include "training/checkpoints/checkpoint.h"
#include "training/checkpoints/init_from.h"
#include "training/checkpoints/rng_state.h"
#include "training/loop/fit_support.h"
#include "training/loop/run_dir.h"
#include "training/loop/run_files.h"
#include "training/step/cuda_runtime.h"

namespace salt::training {
namespace fs = std::filesystem;

namespace {

uint64_t rank0_seed(const RunProcesses& processes, const RunSetup& setup) {
  const auto& env = processes.env;
  const auto batch_size = setup.run.data.batch_size;
  spdlog::info("data parallel: {} processes ({}, master {}:{}), backend {}; global batch {} = {} x {}",
               processes.world, parallel::launcher_name(env.launcher), env.master_addr, env.master_port,
               processes.session->group().backend_name(), batch_size * processes.world, batch_size, processes.world);
  // A drawn seed (seed_everything: false) differs per process; rank 0's is everyone's
  // (each epoch's batch order is rank 0's too: FitRun's epoch_order).
  const auto seed = std::stoull(
      processes.session->from_rank0("seed", "choose the seed", [&] { return std::to_string(setup.seed); }));
  // Lightning's DDPStrategy re-seeds each process once the model is built
  // (reset_seed): the batch orders and dropout start from the seed itself.
  seed_everything(seed);
  return seed;
}

}  // namespace

uint64_t agree_on_seed(const RunProcesses& processes, const RunSetup& setup) {
  // salt: torch.set_float32_matmul_precision("medium") for training only (TF32
  // tensor cores); it changes CUDA results only, so CPU runs stay bitwise as before.
  if (processes.device.is_cuda()) cuda::set_float32_matmul_precision("medium");
  const auto seed = processes.session ? rank0_seed(processes, setup) : setup.seed;
  if (setup.run.trainer.precision == Precision::kFloat16Mixed && processes.device.is_cpu())
    spdlog::warn("precision=16-mixed is not supported on CPU; using bf16-mixed instead (as salt does)");
  return seed;
}

namespace {

void load_resumed_weights(RunSetup& setup, RunStart& start) {
  if (start.resume_source.empty()) return;
  start.resume = load_checkpoint(start.resume_source);
  load_module_state(*setup.model, start.resume->state_dict, start.resume_source);
  spdlog::info("resuming from {} (epoch {}, step {})", start.resume_source, start.resume->epoch,
               start.resume->global_step);
}

// Rank 0: claims (creates or locks) the run directory before anything else can
// fail, so that a start failing from here on removes a directory it created.
RunStart claim_start(RunSetup& setup, bool dev_run) {
  RunStart start;
  const auto& run = setup.run;
  if (!dev_run) {
    start.claim = std::make_unique<RunDirClaim>(run.trainer.default_root_dir, run.name, run.log_suffix,
                                                timestamp_now(), run.overwrite_config);
    start.run_dir = start.claim->dir();
    if (start.claim->created())
      start.cleanup = std::make_unique<RunDirCleanup>(start.run_dir, start.claim->created_parents());
    if (const int n = start.claim->created() ? 0 : remove_dead_temp_files(start.run_dir))
      spdlog::info("removed {} temp file(s) left in {} by killed processes", n, start.run_dir.string());
  }
  // Resume: an explicit --ckpt_path, else a requeue checkpoint left in this run directory.
  start.same_dir_resume = !dev_run && fs::exists(start.run_dir / "ckpts" / kRequeueCheckpoint);
  if (run.ckpt_path)
    start.resume_source = *run.ckpt_path;
  else if (start.same_dir_resume)
    start.resume_source = (start.run_dir / "ckpts" / kRequeueCheckpoint).string();
  load_resumed_weights(setup, start);
  return start;
}

std::string start_text(const RunStart& start) {
  return start.run_dir.string() + "\n" + start.resume_source + "\n" + (start.same_dir_resume ? "1" : "0");
}

// Another rank: rank 0's decision (start_text's lines).
RunStart follow_start(RunSetup& setup, const std::string& decided) {
  RunStart start;
  std::istringstream lines(decided);
  std::string dir, source, same;
  std::getline(lines, dir);
  std::getline(lines, source);
  std::getline(lines, same);
  start.run_dir = dir;
  start.resume_source = source;
  start.same_dir_resume = same == "1";
  load_resumed_weights(setup, start);
  return start;
}

}  // namespace

RunStart decide_start(RunSetup& setup, const RunProcesses& processes, bool dev_run) {
  RunStart start;
  if (!processes.session) {
    start = claim_start(setup, dev_run);
  } else {
    // Rank 0 names the run directory (timestamps differ between processes).
    const auto decided = processes.session->from_rank0("start", "start the run", [&] {
      start = claim_start(setup, dev_run);
      return start_text(start);
    });
    if (!processes.main_rank()) start = follow_start(setup, decided);
  }
  // Removes nothing unless rank 0 created the directory; disarmed at the first step.
  if (!start.cleanup) start.cleanup = std::make_unique<RunDirCleanup>(fs::path());
  return start;
}

// A resumed run has its weights from its checkpoint and freezes what its run froze;
// frozen parameters lose requires_grad before the optimizer and the gradient sync exist.
YAML::Node init_weights(RunSetup& setup, const RunStart& start) {
  YAML::Node record;
  const auto& init = setup.run.init_from;
  auto freeze = init ? init->freeze : std::vector<std::string>{};
  if (start.resume && !start.resume->config_yaml.empty()) {
    const auto recorded = recorded_freeze(start.resume->config_yaml);
    if (!init) freeze = recorded;
    else if (recorded != freeze)
      throw UsageError(start.resume_source + ": its run froze " + fmt::format("[{}]", fmt::join(recorded, ", ")) +
                       " (init_from.freeze) and this config freezes " + fmt::format("[{}]", fmt::join(freeze, ", ")) +
                       ": a resumed run trains the parameters its run trained (a new fine-tuning starts "
                       "with init_from and no ckpt_path)");
  }
  if (init && !start.resume) {
    const auto source = init->ckpt_path;
    const auto taken = take_weights(*setup.model, load_checkpoint(source).state_dict, *init, source);
    spdlog::info("init_from {}: {} tensors taken ({} values), {} left at their initial values", source,
                 taken.tensors, taken.values, taken.left.size());
    record["ckpt_path"] = source;
    record["tensors_taken"] = taken.tensors;
    record["tensors_left"] = static_cast<int64_t>(taken.left.size());
  } else if (init) {
    spdlog::info("resuming from {}: init_from's {} is not read (the checkpoint holds the run's weights)",
                 start.resume_source, init->ckpt_path);
  }
  const auto frozen = freeze_parameters(*setup.model, freeze);
  if (frozen.names.empty()) return record;
  spdlog::info("frozen: {} parameter tensors ({} values) are not trained", frozen.names.size(), frozen.values);
  record["parameters_frozen"] = static_cast<int64_t>(frozen.names.size());
  record["frozen_values"] = frozen.values;
  return record;
}

// The model's parameters (count and a hash of names and shapes), the batches'
// shape, the data's size, the precision and the schedule.
std::vector<std::pair<std::string, std::string>> rank_settings(const RunSetup& setup, const StepOptions& options,
                                                               const RunInputs& inputs, const RunStart& start) {
  int64_t count = 0, trainable = 0;
  std::size_t layout = 0;
  const auto params = setup.model->named_parameters(true);
  for (const auto& p : params) {
    count += p.value().numel();
    if (p.value().requires_grad()) trainable += p.value().numel();
    layout = layout * 1000003u ^ std::hash<std::string>{}(p.key() + c10::str(p.value().sizes()));
  }
  YAML::Emitter switches;
  auto yaml = step_options_yaml(options);
  yaml.remove("threads");  // compute threads may differ from rank to rank
  switches << YAML::Flow << yaml;
  const auto text = [](auto v) { return "'" + c10::str(v) + "'"; };
  const auto& trainer = setup.run.trainer;
  return {{"the model", fmt::format("{} parameters ({} trained) in {} tensors (layout {:016x})", count, trainable,
                                    params.size(), layout)},
          {"data.batch_size", text(setup.run.data.batch_size)},
          {"the number of training jets", text(inputs.train->num_rows())},
          {"the number of validation jets", text(inputs.val->num_rows())},
          {"trainer.precision", text(trainer.precision_name)},
          {"trainer.accumulate_grad_batches", text(trainer.accumulate_grad_batches)},
          {"trainer.max_epochs", text(trainer.max_epochs)},
          {"trainer.max_steps", text(trainer.max_steps)},
          {"ckpt_path", text(start.resume_source.empty() ? std::string("null") : start.resume_source)},
          {"the step switches (SALT_*)", switches.c_str()}};
}

// Each rank takes its share of the epoch's list as Lightning's DistributedSampler
// gives it (data/sampler.h, data.md).
StepPlan plan_steps(const RunSetup& setup, const RunInputs& inputs, const RunProcesses& processes,
                    const RunStart& start) {
  const auto& data = setup.run.data;
  StepPlan out;
  out.train_sampler = data::SamplerOptions::training(inputs.train->num_rows(), data.batch_size, setup.seed)
                          .set_shard(processes.rank, processes.world);
  TrainCounts counts{data::BatchSampler(out.train_sampler).batches_per_epoch(), inputs.train->num_rows(),
                     data.batch_size, processes.world};
  std::optional<ResumePoint> resume;
  if (const auto& saved = start.resume) {
    const auto [saved_epochs, saved_steps] = saved_epochs_and_steps(saved->config_yaml);
    resume = ResumePoint{saved->epoch,
                         saved->global_step,
                         saved->batch_in_epoch,
                         saved->scheduler_total_steps,
                         saved->scheduler_last_epoch,
                         saved_world_size(saved->config_yaml, processes.world),
                         saved_epochs,
                         saved_steps};
  }
  const auto& lrs = setup.run.model.lrs;
  out.plan = plan_training(setup.run.trainer, counts, resume, lrs.last_epoch);
  out.train_sampler.shuffle = out.plan.shuffle;
  if (!out.plan.shuffle)
    spdlog::info("overfit_batches: training on the first {} batches in file order every epoch, unshuffled",
                 out.plan.train_batches);
  if (out.plan.new_schedule)
    spdlog::info(
        "model.lrs_config.last_epoch {}: a new one-cycle schedule of {} steps starts at step {} "
        "(the checkpoint's planned {})",
        lrs.last_epoch, out.plan.total_steps, out.plan.schedule_position, start.resume->scheduler_total_steps);
  return out;
}

int64_t schedule_steps_at(const RunSetup& setup, const RunInputs& inputs, const RunProcesses& processes,
                          int64_t batch_size) {
  const auto sampler = data::SamplerOptions::training(inputs.train->num_rows(), batch_size, setup.seed)
                           .set_shard(processes.rank, processes.world);
  const TrainCounts counts{data::BatchSampler(sampler).batches_per_epoch(), inputs.train->num_rows(), batch_size,
                           processes.world};
  if (counts.available_batches <= 0) return 0;
  return plan_training(setup.run.trainer, counts, std::nullopt, setup.run.model.lrs.last_epoch).total_steps;
}

std::unique_ptr<Optimization> make_optimization(const RunSetup& setup, const TrainPlan& plan, const RunStart& start) {
  const auto& model = setup.run.model;
  auto optimization = std::make_unique<Optimization>(setup.model->named_parameters(), optimizer_kind(model.optimizer),
                                                     model.lrs, plan.total_steps,
                                                     start.resume ? start.resume->global_step : 0,
                                                     setup.model->mup_width_mults);
  if (!start.resume) return optimization;
  if (plan.schedule_position >= 0) optimization->set_schedule_index(plan.schedule_position);
  load_adam_state(*optimization, start.resume->adam_state, start.resume_source);
  if (start.resume->cpu_rng_state.defined()) set_cpu_rng_state(start.resume->cpu_rng_state);
  return optimization;
}

// Every check that can refuse the run has passed when these run. A failure until
// the first optimizer step removes a run directory this run created (RunStart's
// cleanup), so a start that fails leaves none behind.
YAML::Node run_git_checks(const FitHooks& hooks, const RunStart& start, const RunProcesses& processes,
                          bool dev_run) {
  YAML::Node git;
  auto git_checks = [&]() -> std::string {
    if (!dev_run && hooks.before_start) git = hooks.before_start(start.run_dir);
    return "";
  };
  if (!processes.session)
    git_checks();
  else
    processes.session->from_rank0("git", "check the git working tree", git_checks);
  return git;
}

std::string write_files(const RunFilesInput& in, const fs::path& run_dir) {
  const auto& trainer = in.setup.run.trainer;
  const auto& device = in.processes.device;
  RunInfo info{in.inputs.train.get(),
               in.inputs.val.get(),
               models::count_parameters(*in.setup.model).trainable,
               device.is_cuda() ? trainer.num_devices * trainer.num_nodes : 0,
               {},
               timestamp_now(),
               in.git,
               in.inputs.train_members,
               in.inputs.val_members};
  if (device.is_cuda())
    for (int i = 0; i < trainer.num_devices; ++i)
      info.gpu_ids.push_back(trainer.device_ids.empty() ? i : trainer.device_ids[static_cast<std::size_t>(i)]);
  info.float32_matmul_precision = cuda::float32_matmul_precision();
  info.step_options =
      step_options_yaml(in.options, StepUse{device.is_cuda(), cpu_bf16_steps(in.context.autocast(), device),
                                            in.graphs_refusal,
                                            in.context.autocast().enabled});
  info.init_from = in.init_from;
  auto yaml = config::to_yaml(write_run_files(run_dir, in.setup, info));
  spdlog::info("run directory: {}", run_dir.string());
  return yaml;
}

data::LoaderOptions loader_options(const data::DataConfig& data, const RunProcesses& processes) {
  data::LoaderOptions options;
  options.set_num_workers(data.num_workers)
      .set_prefetch_factor(data.prefetch_factor)
      .set_pin_memory(data.pin_memory && processes.device.is_cuda())
      .set_persistent_workers(data.persistent_workers);
  return options;
}

RunLoaders make_loaders(const RunInputs& inputs, data::SamplerOptions train_sampler,
                        const data::LoaderOptions& options, int64_t batch_size, const RunProcesses& processes) {
  RunLoaders loaders;
  loaders.train_sampler = train_sampler;
  loaders.train = std::make_unique<data::Loader>(inputs.train, train_sampler, options);
  const auto val_sampler =
      data::SamplerOptions::evaluation(inputs.val->num_rows(), batch_size).set_shard(processes.rank, processes.world);
  loaders.val = std::make_unique<data::Loader>(inputs.val, val_sampler, options);
  return loaders;
}

// A salt-cpp checkpoint restores the generator and which iterators the run had made;
// Lightning runs no sanity check when it resumes (salt's checkpoints), nor under fast_dev_run.
BatchOrderOptions batch_order_options(const RunSetup& setup, const RunStart& start, int world, bool dev_run) {
  const auto& data = setup.run.data;
  return BatchOrderOptions{data.num_workers == 0 || !data.persistent_workers,
                           !dev_run && !start.resume && setup.run.trainer.num_sanity_val_steps != 0, world,
                           data.num_workers > 0};
}

std::unique_ptr<BatchOrder> make_batch_order(const BatchOrderOptions& options, const RunStart& start) {
  const auto& saved = start.resume;
  const bool continuing = saved && saved->cpu_rng_state.defined();
  return std::make_unique<BatchOrder>(options, continuing ? saved->loader_iterators : 0);
}

bool resume_batch_order(BatchOrder& order, const RunStart& start, const TrainPlan& plan, data::Loader& train) {
  const auto& saved = start.resume;
  if (!saved || saved->batch_in_epoch < 0) return false;
  // A checkpoint saved before the epoch's first batch (a signal at its start) has
  // already drawn the order: its generator is past it, so the order is taken as recorded.
  if (const auto& recorded_order = saved->epoch_order; recorded_order.defined()) {
    const auto* p = recorded_order.data_ptr<int64_t>();
    std::vector<int64_t> recorded(p, p + recorded_order.numel());
    try {
      train.sampler().epoch_in(recorded, saved->epoch);  // refused here, naming the file, not at the epoch's start
    } catch (const InputError& e) {
      throw InputError(start.resume_source + ": salt_cpp.epoch_order: " + e.what());
    }
    order.resume_epoch(std::move(recorded), saved->epoch_restart);
    return false;
  }
  if (plan.skip_batches == 0) return false;
  if (!saved->cpu_rng_state.defined()) {  // salt's checkpoint, saved mid-epoch: Lightning starts the epoch over
    order.restart_epoch(plan.skip_batches);
    return true;
  }
  spdlog::warn(
      "{} records no batch order for epoch {} (a checkpoint of an older salt-cpp): the "
      "epoch's other batches follow a new order, so some may come twice and some not at all",
      start.resume_source, saved->epoch);
  return false;
}

std::unique_ptr<TrainStep> make_step(models::SaltWrapperImpl& model, TrainStepOptions options, const RunStart& start) {
  if (start.resume && start.resume->amp_scaling) options.scaler_state(*start.resume->amp_scaling);
  return std::make_unique<TrainStep>(model, options);
}

}  // namespace salt::training
