#include "training/loop/fit.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>

#include "core/errors.h"
#include "core/signals.h"
#include "models/kernels/attention_kernels.h"
#include "training/checkpoints/rng_state.h"
#include "training/loop/fit_run.h"
#include "training/loop/run_files.h"
#include "training/outputs/metrics_log.h"
#include "training/step/batch_device.h"
#include "training/step/validation.h"

namespace salt::training {
namespace fs = std::filesystem;

namespace {

// The valid (not padded) entries of every constituent input, counted on the host.
int64_t valid_constituents(const Batch& batch) {
  int64_t n = 0;
  for (const auto& [name, mask] : batch.pad_masks) n += mask.numel() - mask.sum().item<int64_t>();
  return n;
}

bool is_std_exception(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception&) {
    return true;
  } catch (...) {
    return false;
  }
}

std::string error_text(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (const StopRequested& stop) {
    return "stopped by signal " + std::to_string(stop.signal);
  } catch (...) {
    return "an unknown error";
  }
}

}  // namespace

FitResult FitRun::run(const FitHooks& hooks, const std::optional<StepOptions>& options) {
  // The switches, read once (a mistyped one refused here, not at the first step);
  // CPU bf16 set for the process, the others passed down (fit_step_options).
  const auto switches = options ? *options : read_step_options();
  apply_process_options(switches);
  set_up(hooks, switches);
  try {
    train_epochs();
  } catch (...) {
    auto error = std::current_exception();
    try {
      if (is_std_exception(error)) check_inputs();  // a read error from a file changed under the run: say that
    } catch (...) {
      error = std::current_exception();
    }
    save_on_exception(error);
    std::rethrow_exception(error);
  }
  return finish();
}

void FitRun::train_epochs() {
  step_->start_graphs(record_.graphs_refusal);
  for (int64_t epoch = schedule_.plan.start_epoch;
       (schedule_.plan.max_epochs < 0 || epoch < schedule_.plan.max_epochs) && !position_.stop; ++epoch) {
    // A callback may have asked to stop before this epoch (a Timer already spent at the start).
    if (stop_requested(epoch)) break;
    state_.epoch = epoch;
    const bool nothing_left =
        std::exchange(schedule_.lightning_restart, false) && schedule_.skip_batches >= schedule_.plan.train_batches;
    train_epoch(epoch);
    if (result_.requeued) break;
    state_.batch_in_epoch = -1;
    const bool go_on = nothing_left || !validation_due(epoch) || validate(epoch);
    position_.stepped_in_epoch = -1;  // the epoch and its validation are done
    position_.generator_before_validation = torch::Tensor();
    ++result_.epochs_run;
    if (!go_on) break;
    hook("on_train_epoch_end", &callbacks::Callback::on_train_epoch_end, state_);
    if (stop_requested(epoch + 1)) position_.stop = true;
  }
  step_->stop_graphs();
}

// Lightning's trainer.should_stop, honoured once min_epochs and min_steps are
// met (`epochs_done`: the epochs trained so far, the current one included once
// its batches are done).
bool FitRun::stop_requested(int64_t epochs_done) const {
  if (!state_.should_stop) return false;
  const bool min_epochs_met = !trainer().min_epochs || epochs_done >= *trainer().min_epochs;
  const bool min_steps_met = !trainer().min_steps || state_.global_step >= *trainer().min_steps;
  return min_epochs_met && min_steps_met;
}

// Lightning's on_exception: OnExceptionCheckpoint and ModelCheckpoint(save_on_exception)
// save the state of the last optimizer step (the batches it consumed, the epoch if
// its validation had not finished) before the error's one line. Weights a
// non-finite loss already spoilt are not saved: the last good checkpoint is what to
// resume. A failure to write is a warning; the run's own error is what is reported.
void FitRun::save_on_exception(const std::exception_ptr& error) {
  if (dev_run()) return;  // fast_dev_run writes nothing
  state_.stepping = false;
  state_.batch_in_epoch = position_.stepped_in_epoch;
  if (position_.generator_before_validation.defined()) set_cpu_rng_state(position_.generator_before_validation);
  if (!weights_finite()) {
    spdlog::warn("no checkpoint on exception: the weights are no longer finite at step {}", state_.global_step);
    return;
  }
  try {
    hook("on_exception", &callbacks::Callback::on_exception, state_, error_text(error));
  } catch (const std::exception& e) {
    spdlog::warn("could not save the checkpoint on exception: {}", e.what());
  }
}

bool FitRun::weights_finite() const {
  torch::NoGradGuard no_grad;
  for (const auto& p : setup_.model->parameters())
    if (!p.isfinite().all().item<bool>()) return false;
  return true;
}

// salt's order of the epoch's batches (the run's, or a tuner trial's); with
// several ranks, rank 0's, agreed under `key` (one per epoch).
std::vector<int64_t> FitRun::epoch_order(int64_t full_batches, const std::string& key) {
  auto order = loaders_.order->train_epoch(full_batches, shuffles(trainer()));
  if (!processes_.session) return order;
  const auto agreed = processes_.session->from_rank0(key, "draw the batch order", [&] {
    std::string text;
    for (int64_t k : order) text += std::to_string(k) + " ";
    return text;
  });
  std::istringstream in(agreed);
  order.clear();
  for (int64_t k; in >> k;) order.push_back(k);
  loaders_.order->adopt(order);
  return order;
}

// ---- one training epoch ----
void FitRun::train_epoch(int64_t epoch) {
  const auto timed = callbacks_.profile("run_training_epoch");
  check_inputs();
  setup_.model->train();
  const auto start = std::chrono::steady_clock::now();
  meter_.start("train", epoch);
  const auto order = epoch_order(loaders_.train->sampler().full_batches(), "batch order " + std::to_string(epoch));
  loaders_.train->start_epoch(epoch, order, loaders_.order->epoch_restart());
  state_.accumulate_grad_batches = trainer().accumulate_grad_batches;
  hook("on_epoch_start", &callbacks::Callback::on_epoch_start, state_, std::string("train"),
       schedule_.plan.train_batches);
  logged_batch_ = LossTotals{};
  schedule_.optimization->zero_grad();
  position_.stepped_in_epoch = schedule_.skip_batches;
  for (int64_t b = 0; b < schedule_.plan.train_batches; ++b) {
    if (!processes_.session) check_stop();  // several ranks agree on stopping at step boundaries instead
    const auto asked = std::chrono::steady_clock::now();
    auto batch = [&] {
      const auto timed = callbacks_.profile("[_TrainingEpochLoop].train_dataloader_next");
      return loaders_.train->next();
    }();
    meter_.add_data_wait(std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count());
    if (!batch) break;
    if (b < schedule_.skip_batches) continue;  // done before the requeue: same batch order, so skip them
    state_.batch_in_epoch = b + 1;
    train_batch(std::move(*batch), b);
    if (stop_requested(epoch)) position_.stop = true;
    if (position_.stop) break;
    if (b + 1 < schedule_.plan.train_batches && schedule_.val_plan.after_batch(epoch, b)) validate_mid_epoch(epoch);
    if (position_.stop) break;
  }
  loaders_.train->stop();
  check_finite();  // before the epoch's validation and checkpoint
  schedule_.skip_batches = 0;
  result_.train_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  hook("on_epoch_end", &callbacks::Callback::on_epoch_end, state_, std::string("train"),
                  "step " + std::to_string(state_.global_step));
  record_resources(meter_.finish());
}

// One line per stage, and metadata.yaml's `resources` rewritten (rank 0): what
// the stage cost, so a run that waits for data or runs out of memory says so.
void FitRun::record_resources(const EpochResources& figures) {
  result_.resources.push_back(figures);
  if (attention_kernels_.empty()) attention_kernels_ = models::attention_kernels_used();
  spdlog::info("{}", figures.summary());
  if (!processes_.main_rank() || dev_run()) return;
  std::optional<GraphsCount> graphs;
  if (record_.graphs_refusal.empty() && step_) graphs = step_->graphs_count();
  write_run_resources(start_.run_dir, result_.resources, attention_kernels_, graphs);
}

void FitRun::train_batch(Batch batch, int64_t b) {
  const auto timed = callbacks_.profile("run_training_batch");
  step_->batch_started();
  state_.batch.jets = batch.size;
  state_.batch.items = state_.batch.count_items ? valid_constituents(batch) : 0;
  auto on_device = step_->to_device(std::move(batch));
  const int64_t accumulate = state_.accumulate_grad_batches;
  const bool boundary = (b + 1) % accumulate == 0 || b + 1 == schedule_.plan.train_batches;
  const auto out = step_->forward_backward(on_device, Accumulation{accumulate, boundary});
  step_->watch_finite(out.loss, state_.global_step, processes_.session != nullptr);
  logged_batch_ = LossTotals{};  // Lightning logs each step's own batch (salt's self.log), not a mean
  logged_batch_.add(out, on_device.size);
  result_.train_jets += on_device.size;
  if (boundary) {
    const auto timed = callbacks_.profile("[LightningModule].optimizer_step");
    optimizer_step(b);
  }
  hook("on_batch_end", &callbacks::Callback::on_batch_end, state_, std::string("train"), b, out.loss.detach(),
                  on_device.size);
  step_->batch_done(!processes_.session && boundary && state_.global_step % trainer().log_every_n_steps != 0);
}

// Throws the NaN error for the first non-finite step the step's watch saw, if any.
void FitRun::check_finite() {
  const auto step = step_->first_nonfinite_step();
  if (step >= 0) throw InputError(nan_message("train/loss", state_.epoch, step, start_.run_dir));
}

void FitRun::optimizer_step(int64_t b) {
  bool requeue_now = !dev_run() && take_requeue_request();
  if (processes_.session) {
    processes_.grad_sync->finish();  // every .grad is now the mean over ranks
    const auto flags = processes_.session->agree(step_->nonfinite_seen(), stop_signal(), requeue_now);
    if (flags.nan_rank >= 0)
      throw InputError(nan_message("train/loss on rank " + std::to_string(flags.nan_rank), state_.epoch,
                                   state_.global_step, start_.run_dir));
    if (flags.stop_signal) throw StopRequested{flags.stop_signal};
    requeue_now = flags.requeue && !dev_run();
  }
  state_.stepping = true;
  step_->apply(*schedule_.optimization, [this] {
    hook("on_after_backward", &callbacks::Callback::on_after_backward, state_);
    state_.last_step.lr = schedule_.optimization->current_lr();
    state_.last_step.beta1 = schedule_.optimization->current_beta1();
  });
  start_.cleanup->disarm();
  ++state_.global_step;
  state_.stepping = false;
  position_.stepped_in_epoch = b + 1;
  if (state_.global_step % trainer().log_every_n_steps == 0) {
    check_finite();
    log_interval();
  }
  if (trainer().max_steps > 0 && state_.global_step >= trainer().max_steps) position_.stop = true;
  if (requeue_now) {  // every rank stops here; rank 0 saves
    check_finite();
    if (processes_.main_rank())
      save_requeue_checkpoint(start_.run_dir, state_.actions.capture(), b + 1, *schedule_.optimization);
    result_.requeued = true;
    position_.stop = true;
  }
}

// The step's own batch; with several ranks the mean over them, as salt logs its
// losses with sync_dist when it trains on several devices.
void FitRun::log_interval() {
  auto m = logged_batch_.means("train");
  if (processes_.session) mean_over_ranks(m);
  hook("add_step_metrics", &callbacks::Callback::add_step_metrics, state_, m);
  state_.metrics.train = m;
  hook("on_metrics", &callbacks::Callback::on_metrics, state_, m);
  logged_batch_ = LossTotals{};
}

void FitRun::mean_over_ranks(std::map<std::string, double>& metrics) {
  std::vector<double> values;
  for (const auto& [k, v] : metrics) values.push_back(v);
  values = processes_.session->sum(values);
  std::size_t i = 0;
  for (auto& [k, v] : metrics) v = values[i++] / processes_.world;
}

// ---- validation + checkpoint ----
// limit_val_batches=0 turns validation (and so checkpointing) off, as in Lightning.
// A run that stops validates once more, unless it just did.
bool FitRun::validation_due(int64_t epoch) const {
  if (schedule_.val_plan.val_batches <= 0) return false;
  if (position_.stop) return !position_.validated_last_batch;
  return schedule_.val_plan.at_epoch_end(epoch);
}

// A validation within the epoch: its checkpoints record the batches done, so a
// resume continues after them. Its time counts towards the training stage's.
void FitRun::validate_mid_epoch(int64_t epoch) {
  validate(epoch, true);
  setup_.model->train();
  if (stop_requested(epoch)) {
    position_.stop = true;
    position_.validated_last_batch = true;
  }
}

// Returns false when the run ends here (fast_dev_run).
bool FitRun::validate(int64_t epoch, bool mid_epoch) {
  check_inputs();  // the epoch just trained read unchanged files
  hook("on_epoch_start", &callbacks::Callback::on_epoch_start, state_, std::string("val"),
       schedule_.val_plan.val_batches);
  const auto on_batch = [this](int64_t b, const models::ModelOutput& out, const Batch& batch) {
    hook("on_validation_batch", &callbacks::Callback::on_validation_batch, state_, out, batch);
    hook("on_batch_end", &callbacks::Callback::on_batch_end, state_, std::string("val"), b, out.loss.detach(),
         batch.size);
  };
  const auto timed = callbacks_.profile("run_validation");
  // A run stopped in this validation saves the generator as it was before it: its
  // resume runs the validation again, drawing the same base seed (save_on_exception).
  if (!mid_epoch) position_.generator_before_validation = cpu_rng_state();
  loaders_.order->validation_pass();           // salt's loader may draw a base seed here
  if (!mid_epoch) meter_.start("val", epoch);  // a mid-epoch one counts in the train stage's figures
  auto val =
      validation_pass(setup_.model, *loaders_.val, epoch, schedule_.val_plan.val_batches, step_->context(), on_batch,
                      !processes_.session, [this](double seconds) { meter_.add_data_wait(seconds); });
  if (!mid_epoch) record_resources(meter_.finish());
  if (processes_.session) sum_over_ranks(val);
  auto metrics = val.means("val");
  hook("add_val_metrics", &callbacks::Callback::add_val_metrics, state_, metrics);
  if (!std::isfinite(metrics["val/loss"]))
    throw InputError(nan_message("val/loss", epoch, state_.global_step, start_.run_dir));
  result_.last_val_metrics = metrics;
  state_.metrics.val = metrics;
  std::string summary;
  for (const auto& [k, v] : metrics) summary += (summary.empty() ? "" : ", ") + k + " " + std::to_string(v);
  hook("on_epoch_end", &callbacks::Callback::on_epoch_end, state_, std::string("val"), summary);
  spdlog::info("epoch {} step {}: {}", epoch, state_.global_step, summary);
  if (dev_run()) return false;
  check_inputs();  // before the checkpoint: its val/loss came from an unchanged file
  hook("on_metrics", &callbacks::Callback::on_metrics, state_, metrics);
  hook("on_validation_end", &callbacks::Callback::on_validation_end, state_);
  return true;
}

// Jet-weighted means over all ranks' shards: sum the sums and the jet counts.
void FitRun::sum_over_ranks(LossTotals& val) {
  val.settle();
  std::vector<double> totals{val.jets};
  for (const auto& [k, v] : val.sums) totals.push_back(v);
  totals = processes_.session->sum(totals);
  val.jets = totals[0];
  std::size_t i = 1;
  for (auto& [k, v] : val.sums) v = totals[i++];
  if (const auto flags = processes_.session->agree(false, stop_signal(), false); flags.stop_signal)
    throw StopRequested{flags.stop_signal};
}

// ---- finish ----
FitResult FitRun::finish() {
  if (!result_.requeued) check_inputs();
  hook("on_fit_end", &callbacks::Callback::on_fit_end, state_);
  result_.global_step = state_.global_step;
  if (result_.requeued) {
    result_.requeue_submitted = processes_.main_rank() ? request_requeue() : in_requeueable_slurm_job();
  } else if (!dev_run() && processes_.main_rank()) {
    std::error_code ec;  // finished: a later run in this directory must not resume from it
    fs::remove(start_.run_dir / "ckpts" / kRequeueCheckpoint, ec);
  }
  result_.host_reads_per_step = step_->host_reads_per_step();
  report_speed();
  if (callbacks_.profiler() && processes_.main_rank())
    result_.profile = callbacks_.profiler()->report(dev_run() ? fs::path() : start_.run_dir);
  if (processes_.session)
    processes_.session->group().barrier();  // rank 0's files are complete when any rank reports success
  return result_;
}

void FitRun::report_speed() const {
  step_->report();
  if (result_.train_seconds > 0)
    spdlog::info("trained {} jets in {:.2f} s: {:.0f} jets/s over {} process(es)",
                 result_.train_jets * processes_.world, result_.train_seconds,
                 static_cast<double>(result_.train_jets * processes_.world) / result_.train_seconds,
                 processes_.world);
  if (processes_.grad_sync && processes_.grad_sync->stats().steps > 0) {
    const auto& st = processes_.grad_sync->stats();
    spdlog::info(
        "gradient sync: {} bucket(s), {} started during backward and {} after it, {:.2f} ms waiting per step",
        processes_.grad_sync->num_buckets(), st.buckets_launched_in_backward, st.buckets_launched_after,
        1000 * st.wait_seconds / static_cast<double>(st.steps));
  }
}

FitResult fit(const config::ResolvedConfig& resolved, const FitHooks& hooks, const std::optional<StepOptions>& options) {
  return FitRun(resolved).run(hooks, options);
}

}  // namespace salt::training
