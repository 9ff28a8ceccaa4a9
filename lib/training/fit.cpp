#include "training/fit.h"

#include <spdlog/spdlog.h>

#include <cxxabi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <system_error>
#include <typeinfo>

#include "config/compose.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/memory.h"
#include "core/signals.h"
#include "core/torch_compat.h"
#include "data/file_pin.h"
#include "data/loader.h"
#include "data/temp_copy.h"
#include "dist/session.h"
#include "training/callback_registry.h"
#include "models/kernels/attention_kernels.h"
#include "models/kernels/cpu_bf16.h"
#include "models/packing/host_read.h"
#include "models/kernels/segment_sum.h"
#include "models/kernels/short_attention.h"
#include "models/summary.h"
#include "training/batch_device.h"
#include "training/forward_batch.h"
#include "training/checkpoint.h"
#include "training/cuda_runtime.h"
#include "training/step_options.h"
#include "training/steps_ahead.h"
#include "training/step_graphs.h"
#include "training/device.h"
#include "training/epoch_resources.h"
#include "training/metrics_log.h"
#include "training/model_snapshot.h"
#include "training/optimization.h"
#include "training/profiler.h"
#include "training/progress.h"
#include "training/rng_state.h"
#include "training/run_dir.h"
#include "training/run_files.h"
#include "training/run_setup.h"
#include "training/fit_plan.h"
#include "training/fit_support.h"
#include "training/grad_scaler.h"
#include "training/grad_clip.h"
#include "training/validation.h"

namespace salt::training {
namespace fs = std::filesystem;

namespace {

// A callback's class without its namespaces (ProgressBar), for the profiler.
std::string class_name(const callbacks::Callback& c) {
  int status = 0;
  const char* mangled = typeid(c).name();
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  std::string full = status == 0 && name ? name.get() : mangled;
  const auto colon = full.rfind("::");
  return colon == std::string::npos ? full : full.substr(colon + 2);
}

// One `salt fit`, in named stages: set-up (process group, data, run directory and
// resume, schedule, git checks, run files, loaders), then per epoch training and
// validation + checkpoint, then finish. Callbacks see it through `state_`.
class FitRun {
 public:
  FitRun(const config::ResolvedConfig& resolved, const FitHooks& hooks, const std::optional<StepOptions>& options)
      : setup_(prepare_run(resolved, Stage::kFit)), hooks_(hooks), T(setup_.run.trainer), D(setup_.run.data) {
    dev_run_ = T.fast_dev_run > 0;
    // The switches, read once (a mistyped one refused here, not at the first step)
    // and set where the model's kernels read them.
    options_ = options ? *options : read_step_options();
    apply_step_options(options_);
    steps_ahead_ = cuda::StepsAhead(options_.steps_ahead.value);
  }

  FitResult run() {
    set_up();
    try {
      train_epochs();
    } catch (const std::exception&) {
      check_inputs();  // a read error from a file changed under the run: say that instead
      throw;
    }
    return finish();
  }

 private:
  void train_epochs() {
    start_graphs();
    for (int64_t epoch = plan_.start_epoch; (plan_.max_epochs < 0 || epoch < plan_.max_epochs) && !stop_; ++epoch) {
      // A callback may have asked to stop before this epoch (a Timer already spent at the start).
      if (stop_requested(epoch)) break;
      state_.epoch = epoch;
      train_epoch(epoch);
      if (result_.requeued) break;
      state_.batch_in_epoch = -1;
      const bool go_on = !validation_due(epoch) || validate(epoch);
      ++result_.epochs_run;
      if (!go_on) break;
      hook("on_train_epoch_end", &callbacks::Callback::on_train_epoch_end, state_);
      if (stop_requested(epoch + 1)) stop_ = true;
    }
    stop_graphs();
  }

  // SALT_CUDA_GRAPHS=1 (step_graphs.h): the training steps' forward and backward
  // passes as CUDA graphs where the run allows, else one line saying why not.
  void start_graphs() {
    if (!options_.cuda_graphs.value) return;
    const auto refusal = cuda_graphs_refusal(device_, !session_, T.accumulate_grad_batches, *setup_.model);
    if (!refusal.empty()) return spdlog::warn("SALT_CUDA_GRAPHS=1 but the steps run eagerly: {}", refusal);
    graphs_ = std::make_unique<StepGraphs>(*setup_.model, device_);
  }

  void stop_graphs() {
    if (!graphs_) return;
    spdlog::info("CUDA graphs: {} captured, {} training steps replayed{}", graphs_->graphs(), graphs_->replays(),
                 graphs_->given_up() ? " (then a step waited for the card: eager since)" : "");
    graphs_.reset();
  }

  // Calls a callback hook on every callback; under trainer.profiler each one's
  // time is recorded as [Callback]<class>.<hook>.
  template <class Hook, class... Args>
  void hook(const char* name, Hook h, Args&&... args) {
    if (!profiler_) return callbacks_.call(h, args...);
    for (const auto& c : callbacks_.all()) {
      SimpleProfiler::Scope scope(profiler_.get(), "[Callback]" + class_name(*c) + "." + name);
      ((*c).*h)(args...);
    }
  }

  SimpleProfiler::Scope profile(const char* action) { return SimpleProfiler::Scope(profiler_.get(), action); }

  // Lightning's trainer.should_stop, honoured once min_epochs and min_steps are
  // met (`epochs_done`: the epochs trained so far, the current one included once
  // its batches are done).
  bool stop_requested(int64_t epochs_done) const {
    if (!state_.should_stop) return false;
    const bool min_epochs_met = !T.min_epochs || epochs_done >= *T.min_epochs;
    const bool min_steps_met = !T.min_steps || state_.global_step >= *T.min_steps;
    return min_epochs_met && min_steps_met;
  }

  // ---- set-up ----
  void set_up() {
    if (T.profiler) profiler_ = std::make_unique<SimpleProfiler>(*T.profiler);
    join_data_parallel();
    callbacks_ = callbacks::make_callbacks(T.callbacks, T);
    state_.setup = &setup_;
    state_.main_rank = main_rank_;
    state_.dev_run = dev_run_;
    hook("on_setup", &callbacks::Callback::on_setup, state_);
    // Open (and so validate) the data before anything is written.
    train_reader_ = open_reader(setup_, D.train_file, D.num_train, "num_train");
    val_reader_ = open_reader(setup_, D.val_file, D.num_val, "num_val");
    refuse_empty(*train_reader_, D.train_file, D.num_train, "num_train", "nothing to train on");
    // No validation means no val_loss, so salt's Checkpoint would keep nothing.
    refuse_empty(*val_reader_, D.val_file, D.num_val, "num_val", "no validation loss, so no checkpoint would be kept");
    train_members_ = train_reader_->members();  // before any temp copies
    val_members_ = val_reader_->members();
    decide_start();
    place_model();
    choose_precision();
    tune();
    plan_steps();
    make_optimization();
    run_git_checks();
    copy_to_temp();
    pin_inputs();
    write_files();
    make_loaders();
    prepare_state();
    restore_callbacks();
    hook("on_fit_start", &callbacks::Callback::on_fit_start, state_);
    resume_position();
  }

  // Lightning restores each callback's state_dict by its state_key before on_fit_start.
  void restore_callbacks() {
    if (!resume_) return;
    for (const auto& callback : callbacks_.all()) {
      const auto key = callback->state_key();
      if (key.empty()) continue;
      for (const auto& [saved_key, value] : resume_->callback_states) {
        if (saved_key != key) continue;
        try {
          callback->load_state_dict(state_, value);
        } catch (const std::invalid_argument& e) {  // a PyValue of the wrong kind, a missing entry
          throw InputError(resume_source_ + ": the state of callback " + key + " cannot be read (" + e.what() + ")");
        }
      }
    }
  }

  // Data parallel: a launcher (salt's own, torchrun-style, srun) says which rank this
  // is; devices x num_nodes must match the processes it started.
  void join_data_parallel() {
    const auto dist_env = dist::Session::environment_for(T.num_devices, T.num_nodes);
    device_ = select_device(T, dist_env.local_rank);
    meter_ = ResourceMeter(device_.is_cuda() ? device_.index() : -1);
    // salt: torch.set_float32_matmul_precision("medium") for training only (TF32
    // tensor cores); it changes CUDA results only, so CPU runs stay bitwise as before.
    if (device_.is_cuda()) cuda::set_float32_matmul_precision("medium");
    if (dist_env.distributed()) session_ = dist::Session::join(dist_env, device_);
    rank_ = session_ ? session_->rank() : 0;
    world_ = session_ ? session_->size() : 1;
    main_rank_ = rank_ == 0;
    quiet_.emplace(!main_rank_);
    if (session_) {
      spdlog::info("data parallel: {} processes ({}, master {}:{}), backend {}; global batch {} = {} x {}", world_,
                   dist::launcher_name(dist_env.launcher), dist_env.master_addr, dist_env.master_port,
                   session_->group().backend_name(), D.batch_size * world_, D.batch_size, world_);
      // A drawn seed (seed_everything: true) differs per process; the batch order must not.
      const auto seed =
          std::stoull(session_->from_rank0("seed", "choose the seed", [&] { return std::to_string(setup_.seed); }));
      if (seed != setup_.seed) {
        setup_.seed = seed;
        seed_everything(seed);
      }
    }
    if (T.precision == Precision::kFloat16Mixed && device_.is_cpu())
      spdlog::warn("precision=16-mixed is not supported on CPU; using bf16-mixed instead (as salt does)");
  }

  // Rank 0 names the run directory (timestamps differ between processes), decides
  // what to resume from; the others follow its answer.
  void decide_start() {
    if (!session_) return (void)decide_on_rank0();
    const auto decided = session_->from_rank0("start", "start the run", [this] { return decide_on_rank0(); });
    if (main_rank_) return;
    std::istringstream lines(decided);
    std::string dir, source, same;
    std::getline(lines, dir);
    std::getline(lines, source);
    std::getline(lines, same);
    run_dir_ = dir;
    resume_source_ = source;
    same_dir_resume_ = same == "1";
    load_resume();
  }

  std::string decide_on_rank0() {
    if (!dev_run_) {
      // Claimed (created or locked) before anything else can fail: a start that
      // fails from here on removes a directory it created.
      claim_ = std::make_unique<RunDirClaim>(T.default_root_dir, setup_.run.name, setup_.run.log_suffix,
                                             timestamp_now(), setup_.run.overwrite_config);
      run_dir_ = claim_->dir();
      if (claim_->created()) cleanup_ = std::make_unique<RunDirCleanup>(run_dir_, claim_->created_parents());
      if (const int n = claim_->created() ? 0 : remove_dead_temp_files(run_dir_))
        spdlog::info("removed {} temp file(s) left in {} by killed processes", n, run_dir_.string());
    }
    // Resume: an explicit --ckpt_path, else a requeue checkpoint left in this run directory.
    same_dir_resume_ = !dev_run_ && fs::exists(run_dir_ / "ckpts" / kRequeueCheckpoint);
    if (setup_.run.ckpt_path) resume_source_ = *setup_.run.ckpt_path;
    else if (same_dir_resume_) resume_source_ = (run_dir_ / "ckpts" / kRequeueCheckpoint).string();
    load_resume();
    return run_dir_.string() + "\n" + resume_source_ + "\n" + (same_dir_resume_ ? "1" : "0");
  }

  void load_resume() {
    if (resume_source_.empty()) return;
    resume_ = load_checkpoint(resume_source_);
    load_module_state(*setup_.model, resume_->state_dict, resume_source_);
    spdlog::info("resuming from {} (epoch {}, step {})", resume_source_, resume_->epoch, resume_->global_step);
  }

  void place_model() {
    setup_.model->to(device_);
    if (!session_) return;
    dist::broadcast_module(session_->group(), *setup_.model);  // every rank starts from rank 0's weights
    grad_sync_ = session_->gradient_sync(setup_.model->parameters());
  }

  // Batches per epoch, the one-cycle schedule's length and where a resumed run
  // starts (training/fit_plan.h); each rank takes every world-th batch of the same
  // seeded order (see data.md).
  void plan_steps() {
    train_sampler_ =
        data::SamplerOptions::training(train_reader_->num_rows(), D.batch_size, setup_.seed).set_shard(rank_, world_);
    TrainCounts counts{data::BatchSampler(train_sampler_).batches_per_epoch(), train_reader_->num_rows(),
                       D.batch_size, world_};
    std::optional<ResumePoint> resume;
    if (resume_)
      resume = ResumePoint{resume_->epoch, resume_->global_step, resume_->batch_in_epoch,
                           resume_->scheduler_total_steps, resume_->scheduler_last_epoch,
                           saved_world_size(resume_->config_yaml)};
    plan_ = plan_training(T, counts, resume, setup_.run.model.lrs.last_epoch);
    train_sampler_.shuffle = plan_.shuffle;
    if (!plan_.shuffle)
      spdlog::info("overfit_batches: training on the first {} batches in file order every epoch, unshuffled",
                   plan_.train_batches);
    if (plan_.new_schedule)
      spdlog::info(
          "model.lrs_config.last_epoch {}: a new one-cycle schedule of {} steps starts at step {} "
          "(the checkpoint's planned {})",
          setup_.run.model.lrs.last_epoch, plan_.total_steps, plan_.schedule_position, resume_->scheduler_total_steps);
    skip_batches_ = plan_.skip_batches;
  }

  void make_optimization() {
    const auto kind = optimizer_kind(setup_.run.model.optimizer);
    optimization_ =
        std::make_unique<Optimization>(setup_.model->named_parameters(), kind, setup_.run.model.lrs, plan_.total_steps,
                                       resume_ ? resume_->global_step : 0, setup_.model->mup_width_mults);
    if (!resume_) return;
    if (plan_.schedule_position >= 0) optimization_->set_schedule_index(plan_.schedule_position);
    load_adam_state(*optimization_, resume_->adam_state, resume_source_);
    if (resume_->cpu_rng_state.defined()) set_cpu_rng_state(resume_->cpu_rng_state);
  }

  // Every check that can refuse the run has passed: now the git checks (which may
  // write uncommitted.patch, and push a tag) on rank 0. A failure until the first
  // optimizer step removes a run directory this run created (cleanup_, armed when
  // the directory was claimed), so a start that fails leaves none behind.
  void run_git_checks() {
    if (!cleanup_) cleanup_ = std::make_unique<RunDirCleanup>(fs::path());
    auto git_checks = [&]() -> std::string {
      if (!dev_run_ && hooks_.before_start) git_meta_ = hooks_.before_start(run_dir_);
      return "";
    };
    if (!session_) git_checks();
    else session_->from_rank0("git", "check the git working tree", git_checks);
  }

  // Temp copies (not under fast_dev_run, like salt); removed on every way out.
  void copy_to_temp() {
    if (dev_run_ || !D.move_files_temp) return;
    temp_ = std::make_unique<data::TempCopies>(*D.move_files_temp);
    spdlog::info("copying training files to {}", temp_->dir().string());
    train_reader_ = open_reader(setup_, copy_input(*train_reader_), D.num_train, "num_train");
    val_reader_ = open_reader(setup_, copy_input(*val_reader_), D.num_val, "num_val");
  }

  // A virtual file's members are copied one by one and a virtual file over the
  // copies is written next to them (removed with them).
  std::string copy_input(const data::H5Reader& reader) {
    if (reader.members().empty()) return temp_->copy(reader.path()).string();
    std::vector<fs::path> copies;
    for (const auto& m : reader.members()) copies.push_back(temp_->copy(m.file));
    const auto vds = temp_->reserve(reader.path());
    data::write_virtual_file(copies, vds, "temp copies of the members of " + reader.path().string());
    return vds.string();
  }

  // Every file the readers read: the inputs (or their copies) and any virtual members.
  void pin_inputs() {
    for (const auto* reader : {train_reader_.get(), val_reader_.get()})
      for (const auto& file : reader->files()) pins_.emplace_back(file);
  }

  void write_files() {
    result_.run_dir = run_dir_;
    result_.rank = rank_;
    result_.world_size = world_;
    if (dev_run_ || !main_rank_) return;
    RunInfo info{train_reader_.get(), val_reader_.get(), models::count_parameters(*setup_.model).trainable,
                 device_.is_cuda() ? T.num_devices * T.num_nodes : 0, {}, timestamp_now(), git_meta_,
                 train_members_, val_members_};
    if (device_.is_cuda())
      for (int i = 0; i < T.num_devices; ++i)
        info.gpu_ids.push_back(T.device_ids.empty() ? i : T.device_ids[static_cast<std::size_t>(i)]);
    info.float32_matmul_precision = cuda::float32_matmul_precision();
    info.step_options = step_options_yaml(options_);
    run_config_yaml_ = config::to_yaml(write_run_files(run_dir_, setup_, info));
    spdlog::info("run directory: {}", run_dir_.string());
  }

  data::LoaderOptions loader_options() const {
    data::LoaderOptions options;
    options.set_num_workers(D.num_workers)
        .set_prefetch_factor(D.prefetch_factor)
        .set_pin_memory(D.pin_memory && device_.is_cuda())
        .set_persistent_workers(D.persistent_workers);
    return options;
  }

  data::SamplerOptions val_sampler(int64_t batch_size) const {
    return data::SamplerOptions::evaluation(val_reader_->num_rows(), batch_size).set_shard(rank_, world_);
  }

  void make_loaders() {
    train_loader_ = std::make_unique<data::Loader>(train_reader_, train_sampler_, loader_options());
    val_loader_ = std::make_unique<data::Loader>(val_reader_, val_sampler(D.batch_size), loader_options());
    val_plan_ = plan_validation(T, val_loader_->batches_per_epoch(), plan_);
    // float16 gradients need loss scaling (Lightning's 16-mixed: torch's GradScaler).
    if (needs_loss_scaling())
      scaler_.emplace(resume_ && resume_->amp_scaling ? *resume_->amp_scaling : GradScalerState{});
  }

  void choose_precision() {
    autocast_ = autocast_for(T.precision, device_);
  }
  bool needs_loss_scaling() const { return autocast_.enabled && autocast_.dtype == torch::kFloat16; }

  // ---- tuners (BatchSizeFinder, LearningRateFinder) ----
  // Before anything is planned from the batch size or the learning rate. Sets the
  // parts of state_ tuners read (prepare_state the rest).
  void tune() {
    state_.run_dir = run_dir_;
    state_.world_size = world_;
    state_.train_rows = train_reader_->num_rows();
    if (resume_) state_.resumed_from = resume_source_;
    state_.sum_over_ranks = [this](const std::vector<double>& values) {
      return session_ ? session_->sum(values) : values;
    };
    state_.run_trial = [this](const callbacks::TrialSpec& spec) { return run_trial(spec); };
    state_.edit_config = [this](const config::ConfigEdit& edit) { apply_tuned(edit); };
    hook("tune", &callbacks::Callback::tune, state_);
    state_.run_trial = nullptr;
    state_.edit_config = nullptr;
  }

  // A tuner's result: the typed settings and config.yaml's record change together
  // (config::apply_edit), and D, the run's copy of the data settings, follows.
  void apply_tuned(const config::ConfigEdit& edit) {
    config::apply_edit(setup_.run, setup_.config, edit);
    D = setup_.run.data;
  }

  // A tuner's trial (see callbacks::TrialSpec): the run's step on its own
  // optimizer and loaders; the weights and generators are put back afterwards.
  callbacks::TrialResult run_trial(const callbacks::TrialSpec& spec) {
    callbacks::TrialResult result;
    const auto sampler = data::SamplerOptions::training(train_reader_->num_rows(), spec.batch_size, setup_.seed)
                             .set_shard(rank_, world_);
    result.batches_per_epoch = data::BatchSampler(sampler).batches_per_epoch();
    if (result.batches_per_epoch <= 0 || spec.steps <= 0) return result;
    const ModelSnapshot snapshot(*setup_.model, device_);
    try {
      trial_steps(spec, sampler, result);
      if (spec.val_batches > 0) trial_validation(spec);
    } catch (const std::bad_alloc&) {
      result.out_of_memory = true;
    } catch (const c10::Error& e) {
      if (!is_out_of_memory(e)) throw;
      result.out_of_memory = true;
    }
    return result;
  }

  // Lightning's is_oom_error: CUDA's allocator, or the CPU's.
  static bool is_out_of_memory(const c10::Error& e) {
    if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;
    return allocation_failure(e.what_without_backtrace());
  }

  void trial_steps(const callbacks::TrialSpec& spec, const data::SamplerOptions& sampler,
                   callbacks::TrialResult& result) {
    Optimization optimization(setup_.model->named_parameters(), optimizer_kind(setup_.run.model.optimizer),
                              setup_.run.model.lrs, std::max<int64_t>(spec.steps, 1), 0, setup_.model->mup_width_mults);
    const double beta1 = optimization.current_beta1();  // the momentum the schedule starts at, held
    std::optional<GradScaler> scaler;
    if (needs_loss_scaling()) scaler.emplace();
    data::Loader loader(train_reader_, sampler, loader_options());
    int64_t epoch = 0;
    loader.start_epoch(epoch);
    setup_.model->train();
    const int64_t accumulate = T.accumulate_grad_batches;
    for (int64_t step = 0; step < spec.steps; ++step) {
      if (spec.lr_at) optimization.override_schedule(spec.lr_at(step), beta1);
      double loss = 0;
      for (int64_t k = 0; k < accumulate; ++k) {
        auto batch = loader.next();
        if (!batch) {  // as Lightning's loop, on into the next epoch
          loader.stop();
          loader.start_epoch(++epoch);
          batch = loader.next();
        }
        const auto out = forward_backward(batch_to_device(std::move(*batch), device_), accumulate, k + 1 == accumulate,
                                          scaler ? &*scaler : nullptr);
        loss += host_read<double>(out.loss) / static_cast<double>(accumulate);
      }
      if (grad_sync_) grad_sync_->finish();
      apply_gradients(optimization, scaler ? &*scaler : nullptr);
      ++result.steps_run;
      if (session_) loss = session_->sum({loss})[0] / world_;
      if (spec.after_step && !spec.after_step(step, loss)) break;
    }
    loader.stop();
  }

  void trial_validation(const callbacks::TrialSpec& spec) {
    data::Loader loader(val_reader_, val_sampler(spec.batch_size), loader_options());
    const int64_t batches = std::min(spec.val_batches, loader.batches_per_epoch());
    validation_pass(setup_.model, loader, 0, batches, device_, autocast_, {}, false);
  }

  void prepare_state() {
    state_.optimization = optimization_.get();
    state_.optimizer_name = optimization_->class_name();  // Lightning logs lr-<class name>
    state_.same_dir_resume = same_dir_resume_;
    state_.plan = &plan_;
    state_.val_plan = &val_plan_;
    state_.cuda_device = device_.is_cuda() ? device_.index() : -1;
    state_.weight_decay = setup_.run.model.lrs.weight_decay;
    state_.capture = [this] {
      auto state = capture_state(setup_, *optimization_, state_.epoch, state_.global_step, plan_.total_steps);
      if (scaler_) state.amp_scaling = scaler_->state();
      state.run_config_yaml = run_config_yaml_;
      state.loop_shape = {plan_.train_batches, val_plan_.val_batches, setup_.run.trainer.accumulate_grad_batches};
      state.batch_in_epoch = state_.batch_in_epoch;
      for (const auto& callback : callbacks_.all())
        if (auto key = callback->state_key(); !key.empty())
          state.callback_states.emplace_back(key, callback->state_dict());
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

  void resume_position() {
    state_.global_step = optimization_->steps_done();
    if (!resume_ || resume_->batch_in_epoch < 0) return;
    const int saved_world = saved_world_size(resume_->config_yaml);
    if (saved_world == world_) return;
    spdlog::warn("resuming mid-epoch with {} processes from a run with {}: skipping {} batches per process", world_,
                 saved_world, plan_.skip_batches);
  }

  // ---- one training epoch ----
  void train_epoch(int64_t epoch) {
    const auto timed = profile("run_training_epoch");
    check_inputs();
    setup_.model->train();
    const auto start = std::chrono::steady_clock::now();
    meter_.start("train", epoch);
    train_loader_->start_epoch(epoch);
    state_.accumulate_grad_batches = T.accumulate_grad_batches;
    hook("on_epoch_start", &callbacks::Callback::on_epoch_start, state_, std::string("train"), plan_.train_batches);
    interval_ = LossTotals{};
    optimization_->zero_grad();
    nan_pending_ = false;
    for (int64_t b = 0; b < plan_.train_batches; ++b) {
      if (!session_) check_stop();  // several ranks agree on stopping at step boundaries instead
      const auto asked = std::chrono::steady_clock::now();
      auto batch = [&] {
        const auto timed = profile("[_TrainingEpochLoop].train_dataloader_next");
        return train_loader_->next();
      }();
      meter_.add_data_wait(std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count());
      if (!batch) break;
      if (b < skip_batches_) continue;  // done before the requeue: same batch order, so skip them
      state_.batch_in_epoch = b + 1;
      train_batch(std::move(*batch), b);
      if (stop_requested(epoch)) stop_ = true;
      if (stop_) break;
      if (b + 1 < plan_.train_batches && val_plan_.after_batch(epoch, b)) validate_mid_epoch(epoch);
      if (stop_) break;
    }
    train_loader_->stop();
    check_finite();  // before the epoch's validation and checkpoint
    skip_batches_ = 0;
    result_.train_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    hook("on_epoch_end", &callbacks::Callback::on_epoch_end, state_, std::string("train"),
                    "step " + std::to_string(state_.global_step));
    record_resources(meter_.finish());
  }

  // One line per stage, and metadata.yaml's `resources` rewritten (rank 0): what
  // the stage cost, so a run that waits for data or runs out of memory says so.
  void record_resources(const EpochResources& figures) {
    result_.resources.push_back(figures);
    if (attention_kernels_.empty()) attention_kernels_ = models::attention_kernels_used();
    spdlog::info("{}", figures.summary());
    if (!main_rank_ || dev_run_) return;
    write_run_resources(run_dir_, result_.resources, attention_kernels_);
  }

  void train_batch(Batch batch, int64_t b) {
    const auto timed = profile("run_training_batch");
    host_reads_.step_start();
    auto on_device = batch_to_device(std::move(batch), device_);
    const int64_t accumulate = state_.accumulate_grad_batches;
    const bool boundary = (b + 1) % accumulate == 0 || b + 1 == plan_.train_batches;
    GradScaler* scaler = scaler_ ? &*scaler_ : nullptr;
    const auto out = graphs_ && accumulate == 1
                         ? graphs_->run(on_device, [&](const DeviceBatch& d) { return forward_backward(d, 1, boundary, scaler); })
                         : forward_backward(on_device, accumulate, boundary, scaler);
    watch_finite(out.loss);
    interval_.add(out, on_device.size);
    result_.train_jets += on_device.size;
    if (boundary) {
      const auto timed = profile("[LightningModule].optimizer_step");
      optimizer_step(b);
    }
    hook("on_batch_end", &callbacks::Callback::on_batch_end, state_, std::string("train"), b, out.loss.detach(),
                    on_device.size);
    if (!session_ && boundary && state_.global_step % T.log_every_n_steps != 0) host_reads_.step_done();
    if (device_.is_cuda()) steps_ahead_.step_issued(device_.index());
  }

  // The forward pass (under autocast) and the backward pass of one training batch,
  // as every training step (the run's and a tuner's trial) takes them; with
  // gradient accumulation the loss is divided by the batches per step, and the
  // ranks' gradients are reduced only at the step boundary.
  models::ModelOutput forward_backward(const DeviceBatch& on_device, int64_t accumulate, bool boundary, GradScaler* scaler) {
    models::ModelOutput out;
    {
      const auto timed = profile("[Strategy].training_step");
      out = forward_batch(*setup_.model, on_device, true, autocast_, device_);
    }
    if (grad_sync_) grad_sync_->begin_backward(boundary);
    auto loss = out.loss / static_cast<double>(accumulate);
    if (scaler) loss = scaler->scale(loss);
    const auto timed = profile("[Strategy].backward");
    loss.backward();
    return out;
  }

  // Unscale (16-mixed), clip, step, zero the gradients: every optimizer step (the
  // run's and a trial's). `before_clip` sees the final, unscaled gradients.
  void apply_gradients(Optimization& optimization, GradScaler* scaler, const std::function<void()>& before_clip = {}) {
    if (scaler) scaler->unscale(optimization.parameters());  // before clipping, as Lightning
    if (before_clip) before_clip();
    clip_gradients();
    // A scaled step with an inf/NaN gradient is skipped; the schedule still advances.
    optimization.step(!scaler || scaler->gradients_finite());
    if (scaler) scaler->update();
    optimization.zero_grad();
  }

  // A non-finite loss stops the run. On one process the first step with one is kept
  // on the device and read at logging points (check_finite), so a step never waits
  // for its loss; several ranks agree at every step anyway, so they read it now.
  void watch_finite(const torch::Tensor& loss) {
    if (session_) {
      if (!std::isfinite(host_read<double>(loss))) nan_pending_ = true;
      return;
    }
    if (!first_nonfinite_.defined())
      first_nonfinite_ = torch::full({}, -1, torch::TensorOptions().dtype(torch::kLong).device(loss.device()));
    first_nonfinite_.masked_fill_(loss.detach().isfinite().logical_not() & (first_nonfinite_ < 0), state_.global_step);
  }

  // Throws the NaN error for the first non-finite step watch_finite saw, if any.
  void check_finite() {
    if (!first_nonfinite_.defined()) return;
    const auto step = host_read<int64_t>(first_nonfinite_);
    if (step >= 0) throw InputError(nan_message("train/loss", state_.epoch, step, run_dir_));
  }

  void optimizer_step(int64_t b) {
    bool requeue_now = !dev_run_ && take_requeue_request();
    if (session_) {
      grad_sync_->finish();  // every .grad is now the mean over ranks
      const auto flags = session_->agree(nan_pending_, stop_signal(), requeue_now);
      if (flags.nan_rank >= 0)
        throw InputError(nan_message("train/loss on rank " + std::to_string(flags.nan_rank), state_.epoch,
                                     state_.global_step, run_dir_));
      if (flags.stop_signal) throw StopRequested{flags.stop_signal};
      requeue_now = flags.requeue && !dev_run_;
    }
    apply_gradients(*optimization_, scaler_ ? &*scaler_ : nullptr, [this] {
      hook("on_after_backward", &callbacks::Callback::on_after_backward, state_);
      state_.lr = optimization_->current_lr();
      state_.beta1 = optimization_->current_beta1();
    });
    cleanup_->disarm();
    ++state_.global_step;
    if (state_.global_step % T.log_every_n_steps == 0) {
      check_finite();
      log_interval();
    }
    if (T.max_steps > 0 && state_.global_step >= T.max_steps) stop_ = true;
    if (requeue_now) {  // every rank stops here; rank 0 saves
      check_finite();
      if (main_rank_)
        save_requeue_checkpoint(run_dir_, state_.capture(), b + 1, *optimization_);
      result_.requeued = true;
      stop_ = true;
    }
  }

  void clip_gradients() {
    if (!T.gradient_clip_val) return;
    if (T.gradient_clip_algorithm == "value")
      torch::nn::utils::clip_grad_value_(setup_.model->parameters(), *T.gradient_clip_val);
    else
      clip_grad_norm(setup_.model->parameters(), *T.gradient_clip_val);
  }

  // rank 0's batches, as Lightning logs without sync_dist
  void log_interval() {
    auto m = interval_.means("train");
    hook("add_step_metrics", &callbacks::Callback::add_step_metrics, state_, m);
    state_.train_metrics = m;
    hook("on_metrics", &callbacks::Callback::on_metrics, state_, m);
    interval_ = LossTotals{};
  }

  // ---- validation + checkpoint ----
  // limit_val_batches=0 turns validation (and so checkpointing) off, as in Lightning.
  // A run that stops validates once more, unless it just did.
  bool validation_due(int64_t epoch) const {
    if (val_plan_.val_batches <= 0) return false;
    if (stop_) return !validated_last_batch_;
    return val_plan_.at_epoch_end(epoch);
  }

  // A validation within the epoch: its checkpoints record the batches done, so a
  // resume continues after them. Its time counts towards the training stage's.
  void validate_mid_epoch(int64_t epoch) {
    validate(epoch, true);
    setup_.model->train();
    if (stop_requested(epoch)) {
      stop_ = true;
      validated_last_batch_ = true;
    }
  }

  // Returns false when the run ends here (fast_dev_run).
  bool validate(int64_t epoch, bool mid_epoch = false) {
    check_inputs();  // the epoch just trained read unchanged files
    hook("on_epoch_start", &callbacks::Callback::on_epoch_start, state_, std::string("val"), val_plan_.val_batches);
    const auto on_batch = [this](int64_t b, const models::ModelOutput& out, const Batch& batch) {
      hook("on_validation_batch", &callbacks::Callback::on_validation_batch, state_, out, batch);
      hook("on_batch_end", &callbacks::Callback::on_batch_end, state_, std::string("val"), b, out.loss.detach(),
           batch.size);
    };
    const auto timed = profile("run_validation");
    if (!mid_epoch) meter_.start("val", epoch);  // a mid-epoch one counts in the train stage's figures
    auto val = validation_pass(setup_.model, *val_loader_, epoch, val_plan_.val_batches, device_, autocast_, on_batch,
                               !session_, [this](double seconds) { meter_.add_data_wait(seconds); });
    if (!mid_epoch) record_resources(meter_.finish());
    if (session_) sum_over_ranks(val);
    auto metrics = val.means("val");
    hook("add_val_metrics", &callbacks::Callback::add_val_metrics, state_, metrics);
    if (!std::isfinite(metrics["val/loss"]))
      throw InputError(nan_message("val/loss", epoch, state_.global_step, run_dir_));
    result_.last_val_metrics = metrics;
    state_.val_metrics = metrics;
    std::string summary;
    for (const auto& [k, v] : metrics) summary += (summary.empty() ? "" : ", ") + k + " " + std::to_string(v);
    hook("on_epoch_end", &callbacks::Callback::on_epoch_end, state_, std::string("val"), summary);
    spdlog::info("epoch {} step {}: {}", epoch, state_.global_step, summary);
    if (dev_run_) return false;
    check_inputs();  // before the checkpoint: its val/loss came from an unchanged file
    hook("on_metrics", &callbacks::Callback::on_metrics, state_, metrics);
    hook("on_validation_end", &callbacks::Callback::on_validation_end, state_);
    return true;
  }

  // Jet-weighted means over all ranks' shards: sum the sums and the jet counts.
  void sum_over_ranks(LossTotals& val) {
    val.settle();
    std::vector<double> totals{val.jets};
    for (const auto& [k, v] : val.sums) totals.push_back(v);
    totals = session_->sum(totals);
    val.jets = totals[0];
    std::size_t i = 1;
    for (auto& [k, v] : val.sums) v = totals[i++];
    if (const auto flags = session_->agree(false, stop_signal(), false); flags.stop_signal)
      throw StopRequested{flags.stop_signal};
  }

  // Input files are pinned for the run (data/file_pin.h): a change stops it in one line.
  void check_inputs() const {
    for (const auto& pin : pins_) pin.check();
  }

  // ---- finish ----
  FitResult finish() {
    if (!result_.requeued) check_inputs();
    hook("on_fit_end", &callbacks::Callback::on_fit_end, state_);
    result_.global_step = state_.global_step;
    if (result_.requeued) {
      result_.requeue_submitted = main_rank_ ? request_requeue() : in_requeueable_slurm_job();
    } else if (!dev_run_ && main_rank_) {
      std::error_code ec;  // finished: a later run in this directory must not resume from it
      fs::remove(run_dir_ / "ckpts" / kRequeueCheckpoint, ec);
    }
    result_.host_reads_per_step = host_reads_.per_step();
    report_speed();
    if (profiler_ && main_rank_) result_.profile = profiler_->report(dev_run_ ? fs::path() : run_dir_);
    if (session_) session_->group().barrier();  // rank 0's files are complete when any rank reports success
    return result_;
  }

  void report_speed() const {
    if (host_reads_.steps > 0)
      spdlog::info("host reads of device values: {:.2f} per training step outside logging steps ({} steps)",
                   host_reads_.per_step(), host_reads_.steps);
    if (steps_ahead_.depth() > 0 && steps_ahead_.steps() > 0)
      spdlog::info("host at most {} steps ahead of the card (SALT_MAX_STEPS_AHEAD): waited at {} of {} steps",
                   steps_ahead_.depth(), steps_ahead_.waits(), steps_ahead_.steps());
    if (result_.train_seconds > 0)
      spdlog::info("trained {} jets in {:.2f} s: {:.0f} jets/s over {} process(es)", result_.train_jets * world_,
                   result_.train_seconds, static_cast<double>(result_.train_jets * world_) / result_.train_seconds,
                   world_);
    if (grad_sync_ && grad_sync_->stats().steps > 0) {
      const auto& st = grad_sync_->stats();
      spdlog::info(
          "gradient sync: {} bucket(s), {} started during backward and {} after it, {:.2f} ms waiting per step",
          grad_sync_->num_buckets(), st.buckets_launched_in_backward, st.buckets_launched_after,
          1000 * st.wait_seconds / static_cast<double>(st.steps));
    }
  }

  RunSetup setup_;
  const FitHooks& hooks_;
  StepOptions options_;
  const TrainerConfig& T;
  data::DataConfig D;  // a copy of setup_.run.data, refreshed by apply_tuned (a tuner's new batch size)
  bool dev_run_ = false;
  // process group
  torch::Device device_{torch::kCPU};
  std::unique_ptr<dist::Session> session_;
  int rank_ = 0, world_ = 1;
  bool main_rank_ = true;
  std::optional<QuietLogs> quiet_;
  std::unique_ptr<dist::GradSync> grad_sync_;
  // data
  std::shared_ptr<data::H5Reader> train_reader_, val_reader_;
  std::unique_ptr<data::TempCopies> temp_;
  data::SamplerOptions train_sampler_;
  std::unique_ptr<data::Loader> train_loader_, val_loader_;
  std::string run_config_yaml_;  // config.yaml as written (rank 0): checkpoints' hyper_parameters
  // run directory and resume
  fs::path run_dir_;
  std::optional<CheckpointState> resume_;
  std::string resume_source_;
  bool same_dir_resume_ = false;
  YAML::Node git_meta_;
  std::vector<data::VirtualMember> train_members_, val_members_;  // wildcard inputs' files
  std::vector<data::FilePin> pins_;  // the files the readers read (temp copies when made)
  std::unique_ptr<RunDirClaim> claim_;  // rank 0: the run directory, locked while the run lives
  std::unique_ptr<RunDirCleanup> cleanup_;
  // schedule and loop position
  std::unique_ptr<Optimization> optimization_;
  TrainPlan plan_;
  ValPlan val_plan_;
  int64_t skip_batches_ = 0;  // of the first epoch trained: done before a mid-epoch checkpoint
  bool stop_ = false, nan_pending_ = false;
  bool validated_last_batch_ = false;  // a mid-epoch validation saw the last trained batch
  LossTotals interval_;
  Autocast autocast_;
  ResourceMeter meter_;
  torch::Tensor first_nonfinite_;  // the first step with a non-finite loss (-1: none), on the device
  HostReadMeter host_reads_;
  cuda::StepsAhead steps_ahead_;
  std::optional<GradScaler> scaler_;  // 16-mixed on CUDA
  std::vector<std::string> attention_kernels_;
  std::unique_ptr<StepGraphs> graphs_;  // SALT_CUDA_GRAPHS=1, while training
  std::unique_ptr<SimpleProfiler> profiler_;  // trainer.profiler
  // callbacks
  callbacks::CallbackList callbacks_;
  callbacks::FitState state_;
  FitResult result_;
};

}  // namespace

FitResult fit(const config::ResolvedConfig& resolved, const FitHooks& hooks, const std::optional<StepOptions>& options) {
  return FitRun(resolved, hooks, options).run();
}

}  // namespace salt::training
