// lightning.pytorch.callbacks.StochasticWeightAveraging, with Lightning's rules:
// from epoch swa_start (swa_epoch_start - 1, or that fraction of max_epochs) to
// the last epoch, the weights at the start of each epoch are averaged (a running
// mean), and the one-cycle schedule is swapped for torch's SWALR: from the
// learning rate reached then, annealed (cos or linear) to swa_lrs over
// annealing_epochs, stepped at each epoch's end; momentum stays where it was.
// When the last epoch has run, the average replaces the weights, as Lightning's
// on_train_end does; salt-cpp also writes them to <run>/ckpts/swa.ckpt (Lightning
// leaves them in the module only, which salt's own checkpoints never see). The
// average, its count and the SWALR position are saved in every checkpoint under
// Lightning's keys, so a resumed run averages on exactly. average_model_state is
// what Lightning's holds, the state_dict of a copy of the module (its keys those of
// the checkpoint's state_dict, buffers included: Lightning loads it strictly) with
// the averaged parameters; scheduler_state is SWALR's state_dict (anneal_func
// replaced by torch's newer _anneal_strategy) plus the start lr and momentum
// salt-cpp needs, which a state without them (Lightning's) takes from the one-cycle
// schedule where the averaging began.
#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <optional>

#include "callbacks/checkpoint_writer.h"
#include "callbacks/monitor.h"
#include "training/callback_registry.h"
#include "core/errors.h"
#include "training/checkpoints/checkpoint.h"
#include "training/optim/optimization.h"

namespace salt::callbacks {
namespace {

struct SwaOptions {
  YAML::Node swa_lrs;  // a float or a list of floats
  YAML::Node swa_epoch_start;
  int64_t annealing_epochs = 10;
  std::string annealing_strategy = "cos";
  YAML::Node avg_fn;
  std::optional<std::string> device = std::string("cpu");
};

const config::Binding<SwaOptions>& stochastic_weight_averaging_binding() {
  using namespace config;
  static const auto b =
      Binding<SwaOptions>({})
          .required("swa_lrs", SALT_FIELD(swa_lrs), "The learning rate SWA anneals to (one per param group: salt-cpp has one).",
                    t_union({t_float(), t_list(t_float())}))
          .custom(field("swa_epoch_start", t_union({t_int(), t_float()}), 0.8,
                        "First SWA epoch (from 1), or that fraction of max_epochs."),
                  [](SwaOptions& o, const YAML::Node& n) { o.swa_epoch_start = n; })
          .arg("annealing_epochs", SALT_FIELD(annealing_epochs), "Epochs to anneal the learning rate over.",
               at_least(t_int(), 0))
          .arg("annealing_strategy", SALT_FIELD(annealing_strategy), "cos or linear.", t_choice({"cos", "linear"}))
          .arg("avg_fn", SALT_FIELD(avg_fn), "Averaging function (null: the running mean).", t_optional(t_any()))
          .unsupported("salt-cpp averages with Lightning's running mean")
          .arg("device", SALT_FIELD(device), "Where the average lives: cpu, or null for the model's device.",
               t_optional(t_choice({"cpu", "cuda", "gpu"})));
  return b;
}

bool is_int_text(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

class StochasticWeightAveraging : public Callback {
 public:
  explicit StochasticWeightAveraging(SwaOptions o) : o_(std::move(o)) {
    const auto& lrs = o_.swa_lrs;
    if (lrs.IsSequence() && lrs.size() != 1)
      throw UsageError("StochasticWeightAveraging: swa_lrs has " + std::to_string(lrs.size()) +
                       " values, but salt-cpp's optimizer has one param group: give one");
    swa_lr_ = lrs.IsSequence() ? lrs[0].as<double>() : lrs.as<double>();
    if (!(swa_lr_ > 0)) throw UsageError("StochasticWeightAveraging: swa_lrs must be positive");
    const auto start = o_.swa_epoch_start.Scalar();
    if (is_int_text(start)) {
      start_epoch_ = std::stoll(start);
      if (start_epoch_ < 1) throw UsageError("StochasticWeightAveraging: swa_epoch_start must be >= 1 or a fraction in [0, 1]");
    } else {
      start_fraction_ = o_.swa_epoch_start.as<double>();
      if (!(*start_fraction_ >= 0 && *start_fraction_ <= 1))
        throw UsageError("StochasticWeightAveraging: swa_epoch_start must be >= 1 or a fraction in [0, 1]");
    }
  }

  std::string state_key() const override { return "StochasticWeightAveraging"; }

  serialize::PyValue state_dict() const override {
    using serialize::PyValue;
    auto d = PyValue::dict();
    auto put = [&](const char* k, PyValue v) { d.set_item(PyValue::str(k), std::move(v)); };
    put("n_averaged", PyValue::integer(n_averaged_));
    put("latest_update_epoch", PyValue::integer(latest_update_epoch_));
    if (initialized_) {
      auto sched = PyValue::dict();  // torch's SWALR.state_dict() fields salt-cpp needs to go on
      sched.set_item(PyValue::str("anneal_epochs"), PyValue::integer(o_.annealing_epochs));
      sched.set_item(PyValue::str("base_lrs"), PyValue::list({PyValue::real(swa_lr_)}));
      // Lightning's SWALR counts last_epoch from max_epochs (cos) or -1 (linear), one per step.
      sched.set_item(PyValue::str("last_epoch"),
                     PyValue::integer((o_.annealing_strategy == "cos" ? max_epochs_ : -1) + sched_steps_));
      sched.set_item(PyValue::str("_step_count"), PyValue::integer(sched_steps_ + 1));
      sched.set_item(PyValue::str("_get_lr_called_within_step"), PyValue::boolean(false));
      sched.set_item(PyValue::str("_last_lr"), PyValue::list({PyValue::real(lr_at(sched_steps_))}));
      sched.set_item(PyValue::str("_anneal_strategy"), PyValue::str(o_.annealing_strategy));
      sched.set_item(PyValue::str("salt_cpp_lr0"), PyValue::real(lr0_));
      sched.set_item(PyValue::str("salt_cpp_beta1"), PyValue::real(beta1_));
      put("scheduler_state", sched);
    } else {
      put("scheduler_state", PyValue());
    }
    if (average_.empty() || !model_) {
      put("average_model_state", PyValue());
    } else {
      const std::map<std::string, torch::Tensor> averaged(average_.begin(), average_.end());
      auto avg = PyValue::dict({}, "collections.OrderedDict");
      for (const auto& [name, t] : training::module_state(*model_)) {
        auto it = averaged.find(name);
        avg.set_item(PyValue::str(name), PyValue::tensor(it == averaged.end() ? t.detach() : it->second));
      }
      put("average_model_state", avg);
    }
    return d;
  }

  void load_state_dict(FitState& s, const serialize::PyValue& d) override {
    n_averaged_ = required_entry(d, "n_averaged").as_int();
    latest_update_epoch_ = required_entry(d, "latest_update_epoch").as_int();
    if (const auto* sched = d.find("scheduler_state"); sched && sched->is_mapping()) {
      restored_steps_ = required_entry(*sched, "_step_count").as_int() - 1;
      const auto* lr0 = sched->find("salt_cpp_lr0");
      const auto* beta1 = sched->find("salt_cpp_beta1");
      // Lightning's holds neither: they are the one-cycle schedule's values where the
      // averaging started (start_swa finds them).
      start_from_schedule_ = !lr0 || !beta1;
      if (!start_from_schedule_) {
        lr0_ = lr0->as_number();
        beta1_ = beta1->as_number();
      }
    }
    average_.clear();
    const auto* avg = d.find("average_model_state");
    if (!avg || !avg->is_mapping() || n_averaged_ == 0) return;
    // The parameters' averages, in the model's order (buffers and salt's aliases are
    // the module's own, not averaged).
    std::map<std::string, torch::Tensor> saved;
    for (const auto& [name, t] : avg->entries()) saved.emplace(name.as_str(), t.as_tensor());
    for (const auto& p : s.setup->model->named_parameters()) {
      auto it = saved.find(p.key());
      if (it == saved.end())
        throw std::invalid_argument("StochasticWeightAveraging's average_model_state has no '" + p.key() + "'");
      // Before, a wrongly shaped average was broadcast into the weights at the end.
      if (it->second.sizes() != p.value().sizes())
        throw std::invalid_argument("StochasticWeightAveraging's average_model_state '" + p.key() + "' has shape " +
                                    c10::str(it->second.sizes()) + ", but the parameter has shape " +
                                    c10::str(p.value().sizes()));
      if (!it->second.is_floating_point())
        throw std::invalid_argument("StochasticWeightAveraging's average_model_state '" + p.key() + "' is a " +
                                    std::string(c10::toString(it->second.scalar_type())) +
                                    " tensor, not a floating-point one");
      average_.emplace_back(p.key(), it->second.to(p.value().scalar_type()).clone());
    }
  }

  void on_fit_start(FitState& s) override {
    model_ = s.setup->model.get();
    max_epochs_ = s.max_epochs();
    if (s.max_epochs() <= 0)
      throw UsageError("StochasticWeightAveraging needs trainer.max_epochs (its last epoch ends the averaging)");
    const int64_t start = start_fraction_ ? static_cast<int64_t>(static_cast<double>(s.max_epochs()) * *start_fraction_)
                                          : start_epoch_;
    swa_start_ = std::max<int64_t>(start - 1, 0);
    swa_end_ = s.max_epochs() - 1;
  }

  void on_epoch_start(FitState& s, const std::string& stage, int64_t) override {
    if (stage != "train" || s.epoch < swa_start_ || s.epoch > swa_end_) return;
    if (!initialized_) start_swa(s);
    if (s.epoch > latest_update_epoch_) {
      update_average(s);
      latest_update_epoch_ = s.epoch;
    }
  }

  // SWALR steps once per epoch (before checkpoints save its position).
  void on_train_epoch_end(FitState& s) override {
    if (!initialized_ || s.epoch < swa_start_) return;
    ++sched_steps_;
    s.optimization->override_schedule(lr_at(sched_steps_), beta1_);
  }

  void on_fit_end(FitState& s) override {
    if (!initialized_ || s.epoch != swa_end_ || average_.empty()) return;
    transfer(s);
    if (s.dev_run || !s.process.main_rank) return;
    const auto path = s.run_dir / "ckpts" / "swa.ckpt";
    write_checkpoint(s, path);
    spdlog::info("StochasticWeightAveraging: the average of {} epochs' weights is in {}", n_averaged_, path.string());
  }

 private:
  void start_swa(FitState& s) {
    initialized_ = true;
    if (restored_steps_ >= 0) {  // resumed within SWA: its schedule where it was
      sched_steps_ = restored_steps_;
      if (start_from_schedule_) {  // the schedule step that began epoch swa_start
        const int64_t per_epoch = (s.train_batches() + s.accumulate_grad_batches - 1) / s.accumulate_grad_batches;
        const int64_t start = s.optimization->schedule_index() - (s.epoch - swa_start_) * per_epoch;
        lr0_ = s.optimization->schedule_lr_at(start);
        beta1_ = s.optimization->schedule_beta1_at(start);
      }
    } else {
      lr0_ = s.optimization->current_lr();
      beta1_ = s.optimization->current_beta1();
      sched_steps_ = 0;
      if (s.epoch != swa_start_) spdlog::warn("StochasticWeightAveraging starts at epoch {} without saved state", s.epoch);
    }
    spdlog::info("Swapping scheduler OneCycleLR for SWALR (from lr {} to {} over {} epochs, {})", lr0_, swa_lr_,
                 o_.annealing_epochs, o_.annealing_strategy);
    s.optimization->override_schedule(lr_at(sched_steps_), beta1_);
  }

  // torch's SWALR after `k` steps: swa_lr x alpha + lr0 x (1 - alpha), alpha the
  // annealing of min(1, k / annealing_epochs) (k at least 1 with no annealing).
  double lr_at(int64_t k) const {
    const int64_t n = o_.annealing_epochs;
    const int64_t step = n == 0 ? std::max<int64_t>(1, k) : k;
    const double t = std::clamp(static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, n)), 0.0, 1.0);
    const double alpha = o_.annealing_strategy == "cos" ? (1 - std::cos(M_PI * t)) / 2 : t;
    return swa_lr_ * alpha + lr0_ * (1 - alpha);
  }

  // Lightning's update_parameters: the running mean of the parameters, on `device`.
  void update_average(FitState& s) {
    torch::NoGradGuard no_grad;
    const auto params = s.setup->model->named_parameters();
    if (average_.empty())
      for (const auto& p : params) average_.emplace_back(p.key(), torch::Tensor());
    std::size_t i = 0;
    for (const auto& p : params) {
      auto& avg = average_.at(i++).second;
      const bool on_cpu = o_.device == std::optional<std::string>("cpu");  // Lightning's default
      auto current = p.value().detach().to(on_cpu ? torch::Device(torch::kCPU) : p.value().device());
      if (n_averaged_ == 0 || !avg.defined()) avg = current.clone();
      else avg.add_((current - avg) / static_cast<double>(n_averaged_ + 1));
    }
    ++n_averaged_;
  }

  void transfer(FitState& s) {
    torch::NoGradGuard no_grad;
    std::size_t i = 0;
    for (const auto& p : s.setup->model->named_parameters()) p.value().copy_(average_.at(i++).second);
  }

  SwaOptions o_;
  const torch::nn::Module* model_ = nullptr;  // for average_model_state's buffers and names
  int64_t max_epochs_ = 0;
  double swa_lr_ = 0;
  int64_t start_epoch_ = 0;
  std::optional<double> start_fraction_;
  int64_t swa_start_ = 0, swa_end_ = 0;
  bool initialized_ = false;
  int64_t n_averaged_ = 0, latest_update_epoch_ = -1;
  int64_t sched_steps_ = 0, restored_steps_ = -1;
  bool start_from_schedule_ = false;  // a resumed state without salt-cpp's lr0 and beta1 (Lightning's)
  double lr0_ = 0, beta1_ = 0;
  std::vector<std::pair<std::string, torch::Tensor>> average_;
};

const bool kStochasticWeightAveragingRegistered = register_callback(
    {{"lightning.pytorch.callbacks.StochasticWeightAveraging", "callback", stochastic_weight_averaging_binding().type(),
      "Averages the weights of the last epochs (SWA) under an annealed learning rate.", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.StochasticWeightAveraging"}},
     [](const YAML::Node& args) { return std::make_unique<StochasticWeightAveraging>(stochastic_weight_averaging_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
