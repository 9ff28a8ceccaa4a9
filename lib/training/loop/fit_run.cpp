// FitRun's set-up: the stages of fit_start.h in order, their results kept as the
// run's parts, and the callbacks' view of the run (state_) connected to them.
#include <cxxabi.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <typeinfo>

#include "core/errors.h"
#include "training/callback_registry.h"
#include "training/checkpoints/checkpoint.h"
#include "training/loop/fit_run.h"
#include "training/loop/fit_start.h"
#include "training/step/step_context.h"
#include "training/step/step_graphs.h"
#include "training/tuners/tuner_trials.h"

namespace salt::training {

std::string callback_class_name(const callbacks::Callback& c) {
  int status = 0;
  const char* mangled = typeid(c).name();
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  std::string full = status == 0 && name ? name.get() : mangled;
  const auto colon = full.rfind("::");
  return colon == std::string::npos ? full : full.substr(colon + 2);
}

FitRun::FitRun(const config::ResolvedConfig& resolved) : setup_(prepare_run(resolved, Stage::kFit)) {}

FitRun::~FitRun() = default;

// Every stage up to the first training batch, in order.
void FitRun::set_up(const FitHooks& hooks, const StepOptions& options) {
  const bool dev = dev_run();
  processes_ = join_processes(trainer());
  meter_ = ResourceMeter(processes_.device.is_cuda() ? processes_.device.index() : -1);
  quiet_.emplace(!processes_.main_rank());
  setup_.seed = agree_on_seed(processes_, setup_);
  start_callbacks();
  inputs_ = open_inputs(setup_, setup_.run.data);  // before anything is written
  start_ = decide_start(setup_, processes_, dev);
  record_.init_from = init_weights(setup_, start_);
  setup_.model->to(processes_.device);
  if (processes_.session) {  // the same on every rank, before the broadcast, which mismatched weights abort
    processes_.session->require_same(rank_settings(setup_, options, inputs_, start_));
    parallel::broadcast_module(processes_.session->group(), *setup_.model);  // every rank starts from rank 0's
    processes_.grad_sync = processes_.session->gradient_sync(setup_.model->parameters());
  }
  const auto context = make_step_context(trainer(), processes_.device, options);
  const auto step_options = [&] {
    return fit_step_options(trainer(), context, options)
        .grad_sync(processes_.grad_sync.get())
        .profiler(callbacks_.profiler());
  };
  loaders_.order = make_batch_order(batch_order_options(setup_, start_, processes_.world, dev), start_);
  const int64_t configured_batch = setup_.run.data.batch_size;
  run_tuners(step_options());  // before anything is planned from the batch size or the learning rate
  auto planned = plan_steps(setup_, inputs_, processes_, start_);
  if (const int64_t found = setup_.run.data.batch_size; found != configured_batch)
    if (const int64_t steps = schedule_steps_at(setup_, inputs_, processes_, configured_batch); steps > 0)
      keep_configured_schedule(planned.plan, steps, configured_batch, found);
  schedule_.plan = planned.plan;
  schedule_.skip_batches = planned.plan.skip_batches;
  schedule_.optimization = make_optimization(setup_, schedule_.plan, start_);
  record_.git = run_git_checks(hooks, start_, processes_, dev);
  record_.graphs_refusal =
      decide_graphs(context.graphs(), processes_.device, !processes_.session, trainer().accumulate_grad_batches,
                    *setup_.model);
  const auto& data = setup_.run.data;
  if (!dev && data.move_files_temp)  // not under fast_dev_run, like salt
    copy_inputs_to(inputs_, setup_, data, *data.move_files_temp, processes_.env.local_world_size);
  pin_inputs(inputs_);
  result_.run_dir = start_.run_dir;
  result_.rank = processes_.rank;
  result_.world_size = processes_.world;
  if (!dev && processes_.main_rank())
    record_.config_yaml = write_files(
        {setup_, inputs_, processes_, options, context, record_.git, record_.init_from, record_.graphs_refusal},
        start_.run_dir);
  auto order = std::move(loaders_.order);
  loaders_ =
      make_loaders(inputs_, planned.train_sampler, loader_options(data, processes_), data.batch_size, processes_);
  loaders_.order = std::move(order);
  schedule_.lightning_restart = resume_batch_order(*loaders_.order, start_, schedule_.plan, *loaders_.train);
  schedule_.val_plan = plan_validation(trainer(), loaders_.val->batches_per_epoch(), schedule_.plan);
  step_ = make_step(*setup_.model, step_options(), start_);
  connect_state();
  restore_callbacks();
  hook("on_fit_start", &callbacks::Callback::on_fit_start, state_);
  resume_position();
}

void FitRun::start_callbacks() {
  std::unique_ptr<SimpleProfiler> profiler;
  if (trainer().profiler) profiler = std::make_unique<SimpleProfiler>(*trainer().profiler);
  callbacks_ = FitCallbacks(callbacks::make_callbacks(trainer().callbacks, trainer()), std::move(profiler));
  state_.setup = &setup_;
  state_.process.main_rank = processes_.main_rank();
  state_.process.rank = processes_.rank;
  state_.dev_run = dev_run();
  hook("on_setup", &callbacks::Callback::on_setup, state_);
}

// The tuners (BatchSizeFinder, LearningRateFinder) run trials and edit the run's
// settings (config::apply_edit: the typed settings and config.yaml's record
// together); what depends on them is planned and built after, from the edited
// settings. Sets the parts of state_ tuners read (connect_state the rest).
void FitRun::run_tuners(const TrainStepOptions& step_options) {
  state_.run_dir = start_.run_dir;
  state_.process.world_size = processes_.world;
  state_.train_rows = inputs_.train->num_rows();
  if (start_.resume) state_.resumed_from = start_.resume_source;
  state_.actions.sum_over_ranks = [this](const std::vector<double>& values) {
    return processes_.session ? processes_.session->sum(values) : values;
  };
  int64_t trial_epochs = 0;
  TrialOrder order{
      [this, &trial_epochs](int64_t full_batches) {
        return epoch_order(full_batches, "tuner batch order " + std::to_string(trial_epochs++));
      },
      [this] { loaders_.order->validation_pass(); },
      [this](int64_t full_batches) { loaders_.order->start_tuning(full_batches, shuffles(trainer())); },
      [this](int64_t full_batches) { loaders_.order->reload(full_batches, shuffles(trainer())); }};
  TunerTrials trials(setup_, step_options, trainer().accumulate_grad_batches, inputs_.train, inputs_.val,
                     loader_options(setup_.run.data, processes_), std::move(order), processes_.session.get());
  state_.actions.run_trial = [&trials](const callbacks::TrialSpec& spec) { return trials.run(spec); };
  state_.actions.reload_loaders = [&trials](int64_t batch_size) { trials.reload_loaders(batch_size); };
  state_.actions.edit_config = [this](const config::ConfigEdit& edit) { config::apply_edit(setup_.run, setup_.config, edit); };
  hook("tune", &callbacks::Callback::tune, state_);
  state_.actions.run_trial = nullptr;
  state_.actions.reload_loaders = nullptr;
  state_.actions.edit_config = nullptr;
}

void FitRun::connect_state() {
  state_.optimization = schedule_.optimization.get();
  state_.last_step.optimizer_name = schedule_.optimization->class_name();  // Lightning logs lr-<class name>
  state_.same_dir_resume = start_.same_dir_resume;
  state_.plan = &schedule_.plan;
  state_.val_plan = &schedule_.val_plan;
  state_.process.cuda_device = processes_.device.is_cuda() ? processes_.device.index() : -1;
  state_.last_step.weight_decay = setup_.run.model.lrs.weight_decay;
  state_.actions.capture = [this] {
    auto state =
        capture_state(setup_, *schedule_.optimization, state_.epoch, state_.global_step, schedule_.plan.total_steps);
    if (const auto* scaler = step_->scaler()) state.amp_scaling = scaler->state();
    state.run_config_yaml = record_.config_yaml;
    state.loop_shape = {schedule_.plan.train_batches, schedule_.val_plan.val_batches, trainer().accumulate_grad_batches};
    state.batch_in_epoch = state_.batch_in_epoch;
    if (state.batch_in_epoch >= 0) {
      state.epoch_order = torch::tensor(loaders_.order->current(), torch::kLong);
      state.epoch_restart = loaders_.order->epoch_restart();
    }
    state.loader_iterators = loaders_.order->iterators_made();
    for (const auto& callback : callbacks_.all())
      if (auto key = callback->state_key(); !key.empty()) state.callback_states.emplace_back(key, callback->state_dict());
    for (const auto& callback : callbacks_.all()) callback->on_save_checkpoint(state_, state);
    return state;
  };
  state_.actions.checkpoint_saved = [this](const std::filesystem::path& path) {
    result_.checkpoints.push_back(path);
    hook("on_checkpoint_saved", &callbacks::Callback::on_checkpoint_saved, state_, path);
  };
  state_.actions.log_histogram = [this](const std::string& tag, const std::vector<double>& values) {
    hook("on_histogram", &callbacks::Callback::on_histogram, state_, tag, values);
  };
  state_.actions.log_image = [this](const std::string& tag, const std::string& png) {
    hook("on_image", &callbacks::Callback::on_image, state_, tag, png);
  };
  state_.actions.log_text = [this](const std::string& tag, const std::string& markdown) {
    hook("on_text", &callbacks::Callback::on_text, state_, tag, markdown);
  };
}

// Lightning restores each callback's state_dict by its state_key before on_fit_start.
void FitRun::restore_callbacks() {
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

void FitRun::resume_position() {
  state_.global_step = schedule_.optimization->steps_done();
  if (!start_.resume || start_.resume->batch_in_epoch < 0) return;
  const int saved_world = saved_world_size(start_.resume->config_yaml, processes_.world);
  if (saved_world == processes_.world) return;
  spdlog::warn("resuming mid-epoch with {} processes from a run with {}: skipping {} batches per process",
               processes_.world, saved_world, schedule_.plan.skip_batches);
}

void FitRun::check_inputs() const {
  for (const auto& pin : inputs_.pins) pin.check();
}

}  // namespace salt::training
