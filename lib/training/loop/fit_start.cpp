#include "training/loop/fit_start.h"

#include <cxxabi.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <sstream>
#include <typeinfo>

#include "config/compose.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/signals.h"
#include "core/torch_compat.h"
#include "data/file_pin.h"
#include "data/loader.h"
#include "data/temp_copy.h"
#include "data/virtual_file.h"
#include "models/kernels/attention_kernels.h"
#include "models/kernels/cpu_bf16.h"
#include "models/summary.h"
#include "parallel/session.h"
#include "training/callback_registry.h"
#include "training/checkpoints/checkpoint.h"
#include "training/checkpoints/init_from.h"
#include "training/checkpoints/rng_state.h"
#include "training/fit_plan.h"
#include "training/loop/epoch_resources.h"
#include "training/loop/fit_support.h"
#include "training/loop/run_dir.h"
#include "training/loop/run_files.h"
#include "training/optim/optimization.h"
#include "training/outputs/profiler.h"
#include "training/run_setup.h"
#include "training/step/batch_device.h"
#include "training/step/cuda_runtime.h"
#include "training/step/device.h"
#include "training/step/forward_batch.h"
#include "training/step/step_graphs.h"
#include "training/step/steps_ahead.h"
#include "training/step/train_step.h"
#include "training/step/validation.h"
#include "training/tuners/tuner_trials.h"

namespace salt::training {
namespace fs = std::filesystem;

std::string callback_class_name(const callbacks::Callback& c) {
  int status = 0;
  const char* mangled = typeid(c).name();
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  std::string full = status == 0 && name ? name.get() : mangled;
  const auto colon = full.rfind("::");
  return colon == std::string::npos ? full : full.substr(colon + 2);
}

FitStart::FitStart(const config::ResolvedConfig& resolved, const FitHooks& hooks,
                   const std::optional<StepOptions>& options)
    : setup_(prepare_run(resolved, Stage::kFit)), hooks_(hooks), trainer_(setup_.run.trainer), data_(setup_.run.data) {
  dev_run_ = trainer_.fast_dev_run > 0;
  // The switches, read once (a mistyped one refused here, not at the first step);
  // CPU bf16 set for the process, the others passed down (fit_step_options).
  options_ = options ? *options : read_step_options();
  apply_process_options(options_);
}

FitStart::~FitStart() = default;

void FitStart::set_up() {
  if (trainer_.profiler) profiler_ = std::make_unique<SimpleProfiler>(*trainer_.profiler);
  join_data_parallel();
  callbacks_ = callbacks::make_callbacks(trainer_.callbacks, trainer_);
  state_.setup = &setup_;
  state_.main_rank = processes_.main_rank();
  state_.rank = processes_.rank;
  state_.dev_run = dev_run_;
  hook("on_setup", &callbacks::Callback::on_setup, state_);
  inputs_ = open_inputs(setup_, data_);  // before anything is written
  decide_start();
  init_weights();
  place_model();
  choose_precision();
  tune();
  plan_steps();
  make_optimization();
  run_git_checks();
  copy_to_temp();
  pin_inputs(inputs_);
  write_files();
  make_loaders();
  make_step();
  prepare_state();
  restore_callbacks();
  hook("on_fit_start", &callbacks::Callback::on_fit_start, state_);
  resume_position();
}

// Lightning restores each callback's state_dict by its state_key before on_fit_start.
void FitStart::restore_callbacks() {
  if (!start_.resume) return;
  for (const auto& callback : callbacks_.all()) {
    const auto key = callback->state_key();
    if (key.empty()) continue;
    for (const auto& [saved_key, value] : start_.resume->callback_states) {
      if (saved_key != key) continue;
      try {
        callback->load_state_dict(state_, value);
      } catch (const std::invalid_argument& e) {  // a PyValue of the wrong kind, a missing entry
        throw InputError(start_.resume_source + ": the state of callback " + key + " cannot be read (" + e.what() +
                         ")");
      }
    }
  }
  for (const auto& callback : callbacks_.all()) callback->on_load_checkpoint(state_, *start_.resume);
}

// Data parallel: a launcher (salt's own, torchrun-style, srun) says which rank this
// is; devices x num_nodes must match the processes it started.
void FitStart::join_data_parallel() {
  processes_ = join_processes(trainer_);
  const auto& dist_env = processes_.env;
  meter_ = ResourceMeter(processes_.device.is_cuda() ? processes_.device.index() : -1);
  // salt: torch.set_float32_matmul_precision("medium") for training only (TF32
  // tensor cores); it changes CUDA results only, so CPU runs stay bitwise as before.
  if (processes_.device.is_cuda()) cuda::set_float32_matmul_precision("medium");
  quiet_.emplace(!processes_.main_rank());
  if (processes_.session) {
    spdlog::info("data parallel: {} processes ({}, master {}:{}), backend {}; global batch {} = {} x {}",
                 processes_.world, parallel::launcher_name(dist_env.launcher), dist_env.master_addr,
                 dist_env.master_port, processes_.session->group().backend_name(), data_.batch_size * processes_.world,
                 data_.batch_size, processes_.world);
    // A drawn seed (seed_everything: false) differs per process; rank 0's is everyone's
    // (each epoch's batch order is rank 0's too: fit.cpp's epoch_order).
    setup_.seed = std::stoull(
        processes_.session->from_rank0("seed", "choose the seed", [&] { return std::to_string(setup_.seed); }));
    // Lightning's DDPStrategy re-seeds each process once the model is built
    // (reset_seed): the batch orders and dropout start from the seed itself.
    seed_everything(setup_.seed);
  }
  if (trainer_.precision == Precision::kFloat16Mixed && processes_.device.is_cpu())
    spdlog::warn("precision=16-mixed is not supported on CPU; using bf16-mixed instead (as salt does)");
}

// Rank 0 names the run directory (timestamps differ between processes), decides
// what to resume from; the others follow its answer.
void FitStart::decide_start() {
  if (!processes_.session) return (void)decide_on_rank0();
  const auto decided = processes_.session->from_rank0("start", "start the run", [this] { return decide_on_rank0(); });
  if (processes_.main_rank()) return;
  std::istringstream lines(decided);
  std::string dir, source, same;
  std::getline(lines, dir);
  std::getline(lines, source);
  std::getline(lines, same);
  start_.run_dir = dir;
  start_.resume_source = source;
  start_.same_dir_resume = same == "1";
  load_resume();
}

std::string FitStart::decide_on_rank0() {
  if (!dev_run_) {
    // Claimed (created or locked) before anything else can fail: a start that
    // fails from here on removes a directory it created.
    start_.claim = std::make_unique<RunDirClaim>(trainer_.default_root_dir, setup_.run.name, setup_.run.log_suffix,
                                                 timestamp_now(), setup_.run.overwrite_config);
    start_.run_dir = start_.claim->dir();
    if (start_.claim->created())
      start_.cleanup = std::make_unique<RunDirCleanup>(start_.run_dir, start_.claim->created_parents());
    if (const int n = start_.claim->created() ? 0 : remove_dead_temp_files(start_.run_dir))
      spdlog::info("removed {} temp file(s) left in {} by killed processes", n, start_.run_dir.string());
  }
  // Resume: an explicit --ckpt_path, else a requeue checkpoint left in this run directory.
  start_.same_dir_resume = !dev_run_ && fs::exists(start_.run_dir / "ckpts" / kRequeueCheckpoint);
  if (setup_.run.ckpt_path)
    start_.resume_source = *setup_.run.ckpt_path;
  else if (start_.same_dir_resume)
    start_.resume_source = (start_.run_dir / "ckpts" / kRequeueCheckpoint).string();
  load_resume();
  return start_.run_dir.string() + "\n" + start_.resume_source + "\n" + (start_.same_dir_resume ? "1" : "0");
}

void FitStart::load_resume() {
  if (start_.resume_source.empty()) return;
  start_.resume = load_checkpoint(start_.resume_source);
  load_module_state(*setup_.model, start_.resume->state_dict, start_.resume_source);
  spdlog::info("resuming from {} (epoch {}, step {})", start_.resume_source, start_.resume->epoch,
               start_.resume->global_step);
}

// Fine-tuning (init_from): a new run takes the weights the patterns pick; frozen
// parameters lose requires_grad before the optimizer and the gradient sync exist.
// A resumed run has its weights from its checkpoint and freezes what its run froze.
void FitStart::init_weights() {
  const auto& init = setup_.run.init_from;
  auto freeze = init ? init->freeze : std::vector<std::string>{};
  if (start_.resume && !start_.resume->config_yaml.empty()) {
    const auto recorded = recorded_freeze(start_.resume->config_yaml);
    if (!init) freeze = recorded;
    else if (recorded != freeze)
      throw UsageError(start_.resume_source + ": its run froze " + fmt::format("[{}]", fmt::join(recorded, ", ")) +
                       " (init_from.freeze) and this config freezes " + fmt::format("[{}]", fmt::join(freeze, ", ")) +
                       ": a resumed run trains the parameters its run trained (a new fine-tuning starts "
                       "with init_from and no ckpt_path)");
  }
  if (init && !start_.resume) {
    const auto source = init->ckpt_path;
    const auto taken = take_weights(*setup_.model, load_checkpoint(source).state_dict, *init, source);
    spdlog::info("init_from {}: {} tensors taken ({} values), {} left at their initial values", source,
                 taken.tensors, taken.values, taken.left.size());
    record_.init_from["ckpt_path"] = source;
    record_.init_from["tensors_taken"] = taken.tensors;
    record_.init_from["tensors_left"] = static_cast<int64_t>(taken.left.size());
  } else if (init) {
    spdlog::info("resuming from {}: init_from's {} is not read (the checkpoint holds the run's weights)",
                 start_.resume_source, init->ckpt_path);
  }
  const auto frozen = freeze_parameters(*setup_.model, freeze);
  if (frozen.names.empty()) return;
  spdlog::info("frozen: {} parameter tensors ({} values) are not trained", frozen.names.size(), frozen.values);
  record_.init_from["parameters_frozen"] = static_cast<int64_t>(frozen.names.size());
  record_.init_from["frozen_values"] = frozen.values;
}

void FitStart::place_model() {
  setup_.model->to(processes_.device);
  if (!processes_.session) return;
  processes_.session->require_same(rank_settings());  // before the broadcast, which mismatched weights abort
  parallel::broadcast_module(processes_.session->group(), *setup_.model);  // every rank starts from rank 0's weights
  processes_.grad_sync = processes_.session->gradient_sync(setup_.model->parameters());
}

// What every rank of a data-parallel run must have alike, in words for the error
// naming a difference: the model's parameters (count and a hash of names and
// shapes), the batches' shape, the data's size, the precision and the schedule.
std::vector<std::pair<std::string, std::string>> FitStart::rank_settings() const {
  int64_t count = 0, trainable = 0;
  std::size_t layout = 0;
  const auto params = setup_.model->named_parameters(true);
  for (const auto& p : params) {
    count += p.value().numel();
    if (p.value().requires_grad()) trainable += p.value().numel();
    layout = layout * 1000003u ^ std::hash<std::string>{}(p.key() + c10::str(p.value().sizes()));
  }
  YAML::Emitter switches;
  auto yaml = step_options_yaml(options_);
  yaml.remove("threads");  // compute threads may differ from rank to rank
  switches << YAML::Flow << yaml;
  const auto text = [](auto v) { return "'" + c10::str(v) + "'"; };
  return {{"the model", fmt::format("{} parameters ({} trained) in {} tensors (layout {:016x})", count, trainable,
                                    params.size(), layout)},
          {"data.batch_size", text(data_.batch_size)},
          {"the number of training jets", text(inputs_.train->num_rows())},
          {"the number of validation jets", text(inputs_.val->num_rows())},
          {"trainer.precision", text(trainer_.precision_name)},
          {"trainer.accumulate_grad_batches", text(trainer_.accumulate_grad_batches)},
          {"trainer.max_epochs", text(trainer_.max_epochs)},
          {"trainer.max_steps", text(trainer_.max_steps)},
          {"ckpt_path", text(start_.resume_source.empty() ? std::string("null") : start_.resume_source)},
          {"the step switches (SALT_*)", switches.c_str()}};
}

// Batches per epoch, the one-cycle schedule's length and where a resumed run
// starts (training/fit_plan.h); each rank takes its share of the epoch's list as
// Lightning's DistributedSampler gives it (data/sampler.h, data.md).
void FitStart::plan_steps() {
  loaders_.train_sampler = data::SamplerOptions::training(inputs_.train->num_rows(), data_.batch_size, setup_.seed)
                               .set_shard(processes_.rank, processes_.world);
  TrainCounts counts{data::BatchSampler(loaders_.train_sampler).batches_per_epoch(), inputs_.train->num_rows(),
                     data_.batch_size, processes_.world};
  std::optional<ResumePoint> resume;
  if (start_.resume) {
    const auto [saved_epochs, saved_steps] = saved_epochs_and_steps(start_.resume->config_yaml);
    resume = ResumePoint{start_.resume->epoch,
                         start_.resume->global_step,
                         start_.resume->batch_in_epoch,
                         start_.resume->scheduler_total_steps,
                         start_.resume->scheduler_last_epoch,
                         saved_world_size(start_.resume->config_yaml, processes_.world),
                         saved_epochs,
                         saved_steps};
  }
  schedule_.plan = plan_training(trainer_, counts, resume, setup_.run.model.lrs.last_epoch);
  loaders_.train_sampler.shuffle = schedule_.plan.shuffle;
  if (!schedule_.plan.shuffle)
    spdlog::info("overfit_batches: training on the first {} batches in file order every epoch, unshuffled",
                 schedule_.plan.train_batches);
  if (schedule_.plan.new_schedule)
    spdlog::info(
        "model.lrs_config.last_epoch {}: a new one-cycle schedule of {} steps starts at step {} "
        "(the checkpoint's planned {})",
        setup_.run.model.lrs.last_epoch, schedule_.plan.total_steps, schedule_.plan.schedule_position,
        start_.resume->scheduler_total_steps);
  schedule_.skip_batches = schedule_.plan.skip_batches;
}

void FitStart::make_optimization() {
  const auto kind = optimizer_kind(setup_.run.model.optimizer);
  schedule_.optimization = std::make_unique<Optimization>(
      setup_.model->named_parameters(), kind, setup_.run.model.lrs, schedule_.plan.total_steps,
      start_.resume ? start_.resume->global_step : 0, setup_.model->mup_width_mults);
  if (!start_.resume) return;
  if (schedule_.plan.schedule_position >= 0)
    schedule_.optimization->set_schedule_index(schedule_.plan.schedule_position);
  load_adam_state(*schedule_.optimization, start_.resume->adam_state, start_.resume_source);
  if (start_.resume->cpu_rng_state.defined()) set_cpu_rng_state(start_.resume->cpu_rng_state);
}

// Every check that can refuse the run has passed: now the git checks (which may
// write uncommitted.patch, and push a tag) on rank 0. A failure until the first
// optimizer step removes a run directory this run created (start_.cleanup, armed when
// the directory was claimed), so a start that fails leaves none behind.
void FitStart::run_git_checks() {
  if (!start_.cleanup) start_.cleanup = std::make_unique<RunDirCleanup>(fs::path());
  auto git_checks = [&]() -> std::string {
    if (!dev_run_ && hooks_.before_start) record_.git = hooks_.before_start(start_.run_dir);
    return "";
  };
  if (!processes_.session)
    git_checks();
  else
    processes_.session->from_rank0("git", "check the git working tree", git_checks);
}

// Temp copies (not under fast_dev_run, like salt); removed on every way out.
void FitStart::copy_to_temp() {
  if (dev_run_ || !data_.move_files_temp) return;
  copy_inputs_to(inputs_, setup_, data_, *data_.move_files_temp);
}

void FitStart::write_files() {
  result_.run_dir = start_.run_dir;
  result_.rank = processes_.rank;
  result_.world_size = processes_.world;
  if (dev_run_ || !processes_.main_rank()) return;
  RunInfo info{inputs_.train.get(),
               inputs_.val.get(),
               models::count_parameters(*setup_.model).trainable,
               processes_.device.is_cuda() ? trainer_.num_devices * trainer_.num_nodes : 0,
               {},
               timestamp_now(),
               record_.git,
               inputs_.train_members,
               inputs_.val_members};
  if (processes_.device.is_cuda())
    for (int i = 0; i < trainer_.num_devices; ++i)
      info.gpu_ids.push_back(trainer_.device_ids.empty() ? i : trainer_.device_ids[static_cast<std::size_t>(i)]);
  info.float32_matmul_precision = cuda::float32_matmul_precision();
  info.step_options = step_options_yaml(
      options_, StepUse{processes_.device.is_cuda(), cpu_bf16_steps(step_context_.autocast(), processes_.device)});
  info.init_from = record_.init_from;
  record_.config_yaml = config::to_yaml(write_run_files(start_.run_dir, setup_, info));
  spdlog::info("run directory: {}", start_.run_dir.string());
}

data::LoaderOptions FitStart::loader_options() const {
  data::LoaderOptions options;
  options.set_num_workers(data_.num_workers)
      .set_prefetch_factor(data_.prefetch_factor)
      .set_pin_memory(data_.pin_memory && processes_.device.is_cuda())
      .set_persistent_workers(data_.persistent_workers);
  return options;
}

data::SamplerOptions FitStart::val_sampler(int64_t batch_size) const {
  return data::SamplerOptions::evaluation(inputs_.val->num_rows(), batch_size)
      .set_shard(processes_.rank, processes_.world);
}

void FitStart::make_loaders() {
  loaders_.train = std::make_unique<data::Loader>(inputs_.train, loaders_.train_sampler, loader_options());
  make_batch_order();
  loaders_.val = std::make_unique<data::Loader>(inputs_.val, val_sampler(data_.batch_size), loader_options());
  schedule_.val_plan = plan_validation(trainer_, loaders_.val->batches_per_epoch(), schedule_.plan);
}

// salt's batch order from torch's generator (training/loop/batch_order.h); an exact
// resume mid-epoch finishes the epoch in the order its checkpoint recorded.
void FitStart::make_batch_order() {
  // A salt-cpp checkpoint restores the generator and which iterators the run had made;
  // Lightning runs no sanity check when it resumes (salt's checkpoints), nor under fast_dev_run.
  const bool continuing = start_.resume && start_.resume->cpu_rng_state.defined();
  BatchOrderOptions options{data_.num_workers == 0 || !data_.persistent_workers,
                            !dev_run_ && !start_.resume && trainer_.num_sanity_val_steps != 0, processes_.world,
                            data_.num_workers > 0};
  loaders_.order = std::make_unique<BatchOrder>(options, continuing ? start_.resume->loader_iterators : 0);
  if (!start_.resume || start_.resume->batch_in_epoch < 0) return;
  // A checkpoint saved before the epoch's first batch (a signal at its start) has
  // already drawn the order: its generator is past it, so the order is taken as recorded.
  const auto& order = start_.resume->epoch_order;
  if (order.defined()) {
    const auto* p = order.data_ptr<int64_t>();
    std::vector<int64_t> recorded(p, p + order.numel());
    try {
      loaders_.train->sampler().epoch_in(
          recorded, start_.resume->epoch);  // refused here, naming the file, not at the epoch's start
    } catch (const InputError& e) {
      throw InputError(start_.resume_source + ": salt_cpp.epoch_order: " + e.what());
    }
    loaders_.order->resume_epoch(std::move(recorded), start_.resume->epoch_restart);
    return;
  }
  if (schedule_.plan.skip_batches == 0) return;
  if (!continuing) {  // salt's checkpoint, saved mid-epoch: Lightning starts the epoch over
    loaders_.order->restart_epoch(schedule_.plan.skip_batches);
    schedule_.lightning_restart = true;
    return;
  }
  spdlog::warn(
      "{} records no batch order for epoch {} (a checkpoint of an older salt-cpp): the "
      "epoch's other batches follow a new order, so some may come twice and some not at all",
      start_.resume_source, start_.resume->epoch);
}

// The run's training step (training/step/train_step.h); a resumed run's loss scale
// continues from its checkpoint.
TrainStepOptions FitStart::step_options() const {
  return fit_step_options(trainer_, step_context_, options_)
      .grad_sync(processes_.grad_sync.get())
      .profiler(profiler_.get());
}

void FitStart::make_step() {
  auto options = step_options();
  if (start_.resume && start_.resume->amp_scaling) options.scaler_state(*start_.resume->amp_scaling);
  step_ = std::make_unique<TrainStep>(*setup_.model, options);
}

void FitStart::choose_precision() { step_context_ = make_step_context(trainer_, processes_.device, options_); }

// ---- tuners (BatchSizeFinder, LearningRateFinder) ----
// Before anything is planned from the batch size or the learning rate. Sets the
// parts of state_ tuners read (prepare_state the rest).
void FitStart::tune() {
  state_.run_dir = start_.run_dir;
  state_.world_size = processes_.world;
  state_.train_rows = inputs_.train->num_rows();
  if (start_.resume) state_.resumed_from = start_.resume_source;
  state_.sum_over_ranks = [this](const std::vector<double>& values) {
    return processes_.session ? processes_.session->sum(values) : values;
  };
  TunerTrials trials(setup_, step_options(), trainer_.accumulate_grad_batches, inputs_.train, inputs_.val,
                     loader_options(), processes_.session.get());
  state_.run_trial = [&trials](const callbacks::TrialSpec& spec) { return trials.run(spec); };
  state_.edit_config = [this](const config::ConfigEdit& edit) { apply_tuned(edit); };
  hook("tune", &callbacks::Callback::tune, state_);
  state_.run_trial = nullptr;
  state_.edit_config = nullptr;
}

// A tuner's result: the typed settings and config.yaml's record change together
// (config::apply_edit); what depends on them (the plan, the loaders, the step) is
// built after the tuners, from the edited settings.
void FitStart::apply_tuned(const config::ConfigEdit& edit) { config::apply_edit(setup_.run, setup_.config, edit); }

void FitStart::prepare_state() {
  state_.optimization = schedule_.optimization.get();
  state_.optimizer_name = schedule_.optimization->class_name();  // Lightning logs lr-<class name>
  state_.same_dir_resume = start_.same_dir_resume;
  state_.plan = &schedule_.plan;
  state_.val_plan = &schedule_.val_plan;
  state_.cuda_device = processes_.device.is_cuda() ? processes_.device.index() : -1;
  state_.weight_decay = setup_.run.model.lrs.weight_decay;
  state_.capture = [this] {
    auto state =
        capture_state(setup_, *schedule_.optimization, state_.epoch, state_.global_step, schedule_.plan.total_steps);
    if (const auto* scaler = step_->scaler()) state.amp_scaling = scaler->state();
    state.run_config_yaml = record_.config_yaml;
    state.loop_shape = {schedule_.plan.train_batches, schedule_.val_plan.val_batches,
                        setup_.run.trainer.accumulate_grad_batches};
    state.batch_in_epoch = state_.batch_in_epoch;
    if (state.batch_in_epoch >= 0) {
      state.epoch_order = torch::tensor(loaders_.order->current(), torch::kLong);
      state.epoch_restart = loaders_.order->epoch_restart();
    }
    state.loader_iterators = loaders_.order->iterators_made();
    for (const auto& callback : callbacks_.all())
      if (auto key = callback->state_key(); !key.empty())
        state.callback_states.emplace_back(key, callback->state_dict());
    for (const auto& callback : callbacks_.all()) callback->on_save_checkpoint(state_, state);
    return state;
  };
  state_.checkpoint_saved = [this](const fs::path& path) {
    result_.checkpoints.push_back(path);
    hook("on_checkpoint_saved", &callbacks::Callback::on_checkpoint_saved, state_, path);
  };
  state_.log_histogram = [this](const std::string& tag, const std::vector<double>& values) {
    hook("on_histogram", &callbacks::Callback::on_histogram, state_, tag, values);
  };
  state_.log_image = [this](const std::string& tag, const std::string& png) {
    hook("on_image", &callbacks::Callback::on_image, state_, tag, png);
  };
  state_.log_text = [this](const std::string& tag, const std::string& markdown) {
    hook("on_text", &callbacks::Callback::on_text, state_, tag, markdown);
  };
}

void FitStart::resume_position() {
  state_.global_step = schedule_.optimization->steps_done();
  if (!start_.resume || start_.resume->batch_in_epoch < 0) return;
  const int saved_world = saved_world_size(start_.resume->config_yaml, processes_.world);
  if (saved_world == processes_.world) return;
  spdlog::warn("resuming mid-epoch with {} processes from a run with {}: skipping {} batches per process",
               processes_.world, saved_world, schedule_.plan.skip_batches);
}

// Input files are pinned for the run (data/file_pin.h): a change stops it in one line.
void FitStart::check_inputs() const {
  for (const auto& pin : inputs_.pins) pin.check();
}

}  // namespace salt::training
