// lightning.pytorch.callbacks.WeightAveraging and EMAWeightAveraging (Lightning
// 2.6), with Lightning's rules: an average of the weights (parameters and, with
// use_buffers, buffers: torch's AveragedModel) is updated after optimizer steps
// (and epochs) that should_update picks; every validation runs on the average
// (the weights are swapped in at its start and back at its end); when training
// ends the average replaces the weights. A checkpoint holds the average in
// `state_dict` (what `salt test` and `to_onnx` read), the weights training goes on
// from in `current_model_state` and AveragedModel's count in `averaging_state`,
// as Lightning's on_save_checkpoint lays them out, so Lightning resumes salt-cpp's
// run and salt-cpp resumes Lightning's. The average starts as a copy of the
// weights at the start of the fit (Lightning's deepcopy in setup): a validation
// before the first update validates those.
//
// EMA: decay x average + (1 - decay) x weights (torch's get_ema_avg_fn), in the
// weights' dtype; WeightAveraging alone: the running mean (torch's lerp by
// 1 / (n + 1)). The first update copies the weights.
#include <spdlog/spdlog.h>

#include <map>
#include <optional>

#include "callbacks/monitor.h"
#include "core/errors.h"
#include "training/callback_registry.h"
#include "training/checkpoints/checkpoint.h"

namespace salt::callbacks {
namespace {

struct AveragingOptions {
  std::optional<std::string> device;  // null: the model's
  bool use_buffers = true;
  YAML::Node avg_fn, multi_avg_fn;    // WeightAveraging's AveragedModel kwargs: not supported
  // EMAWeightAveraging's
  std::optional<double> decay;        // set for EMA
  int64_t update_every_n_steps = 1;
  std::optional<int64_t> update_starting_at_step, update_starting_at_epoch;
};

template <class B>
B& common_fields(B& b) {
  using namespace config;
  return b
      .arg("device", SALT_FIELD(device), "Where the average lives: cpu, cuda, cuda:N (null: the model's device).",
           t_optional(t_str()))
      .arg("use_buffers", SALT_FIELD(use_buffers), "Average the buffers too (false: copy them).", t_bool());
}

const config::Binding<AveragingOptions>& weight_averaging_binding() {
  using namespace config;
  static const auto b = [] {
    Binding<AveragingOptions> b({});
    common_fields(b)
        .arg("avg_fn", SALT_FIELD(avg_fn), "AveragedModel's averaging function (null: the running mean).",
             t_optional(t_any()))
        .unsupported("a Python function; EMAWeightAveraging gives the exponential moving average")
        .arg("multi_avg_fn", SALT_FIELD(multi_avg_fn), "AveragedModel's grouped averaging function.",
             t_optional(t_any()))
        .unsupported("a Python function; EMAWeightAveraging gives the exponential moving average");
    return b;
  }();
  return b;
}

const config::Binding<AveragingOptions>& ema_binding() {
  using namespace config;
  static const auto b = [] {
    Binding<AveragingOptions> b({});
    b.custom(field("decay", t_probability(), 0.999, "The average's share at each update."),
             [](AveragingOptions& o, const YAML::Node& n) { o.decay = n.as<double>(); });
    common_fields(b)
        .arg("update_every_n_steps", SALT_FIELD(update_every_n_steps),
             "Update after every n-th optimizer step (0: none by steps).", at_least(t_int(), 0))
        .arg("update_starting_at_step", SALT_FIELD(update_starting_at_step),
             "First optimizer step (from 0) that updates (null: from the first).", t_optional(at_least(t_int(), 0)))
        .arg("update_starting_at_epoch", SALT_FIELD(update_starting_at_epoch),
             "Also update at the end of every epoch from this one (from 0; null: not by epochs).",
             t_optional(at_least(t_int(), 0)));
    return b;
  }();
  return b;
}

class WeightAveraging : public Callback {
 public:
  WeightAveraging(std::string name, AveragingOptions o) : name_(std::move(name)), o_(std::move(o)) {
    if (o_.device && !device_word(*o_.device))
      throw UsageError(name_ + ": device '" + *o_.device + "' is not cpu, cuda or cuda:N");
  }

  // A fit's: `salt test` of a run trained on a card reads the same config on a
  // machine without one, and averages nothing.
  void on_setup(FitState&) override {
    if (o_.device) check_device(*o_.device);
  }

  std::string state_key() const override { return name_; }  // Lightning's: the class name

  serialize::PyValue state_dict() const override {
    auto d = serialize::PyValue::dict();
    d.set_item(serialize::PyValue::str("latest_update_step"), serialize::PyValue::integer(latest_update_step_));
    return d;
  }

  void load_state_dict(FitState&, const serialize::PyValue& d) override {
    latest_update_step_ = required_entry(d, "latest_update_step").as_int();
  }

  // Resumed: the model holds the checkpoint's state_dict, the average when the
  // checkpoint was written with averaging; its current_model_state goes back in.
  void on_load_checkpoint(FitState& s, const training::CheckpointState& ckpt) override {
    ensure_average(s);
    if (ckpt.averaging.current_model_state.empty()) {
      spdlog::warn("{}: the checkpoint was not made with weight averaging; the average starts from its weights", name_);
      return;
    }
    bool counted = false;
    for (const auto& [key, value] : ckpt.averaging.averaging_state)
      if (key == "n_averaged") n_averaged_ = value.item<int64_t>(), counted = true;
    if (!counted)
      throw InputError("the checkpoint's averaging_state has no 'n_averaged' (written with WeightAveraging?)");
    training::load_module_state(*s.setup->model, ckpt.averaging.current_model_state, "the checkpoint's current_model_state");
  }

  void on_fit_start(FitState& s) override { ensure_average(s); }

  void on_batch_end(FitState& s, const std::string& stage, int64_t, const torch::Tensor&, int64_t) override {
    if (stage == "train") catch_up(s);
  }

  void on_train_epoch_end(FitState& s) override {
    if (s.epoch > latest_update_epoch_ && should_update(std::nullopt, s.epoch)) {
      update(s);
      latest_update_epoch_ = s.epoch;
    }
  }

  void on_epoch_start(FitState& s, const std::string& stage, int64_t) override {
    if (stage == "val" && !average_.empty()) swap(s);
  }

  void on_epoch_end(FitState& s, const std::string& stage, const std::string&) override {
    if (stage == "val" && swapped_) swap(s);
  }

  void on_fit_end(FitState& s) override {
    if (swapped_) swap(s);
    torch::NoGradGuard no_grad;
    auto model = model_tensors(s);
    for (std::size_t i = 0; i < model.size(); ++i) model[i].copy_(average_[i]);
  }

  // The average into state_dict, the weights into current_model_state. A state
  // captured mid-validation (an error there) finds them swapped.
  void on_save_checkpoint(FitState& s, training::CheckpointState& state) override {
    if (average_.empty()) return;
    catch_up(s);  // a step checkpoint taken inside the step this batch would update after
    std::map<const void*, torch::Tensor> other;  // a model tensor -> the tensor that holds the other weights
    const auto model = model_tensors(s);
    for (std::size_t i = 0; i < model.size(); ++i) other.emplace(model[i].unsafeGetTensorImpl(), average_[i]);
    auto substituted = state.state_dict;
    for (auto& [key, tensor] : substituted)
      if (auto it = other.find(tensor.unsafeGetTensorImpl()); it != other.end()) tensor = it->second;
    if (swapped_) {
      state.averaging.current_model_state = std::move(substituted);
    } else {
      state.averaging.current_model_state = state.state_dict;
      state.state_dict = std::move(substituted);
    }
    state.averaging.averaging_state = {{"n_averaged", torch::tensor(n_averaged_, torch::kLong)}};
  }

 private:
  // Lightning's should_update: WeightAveraging after every step; EMA's rules.
  bool should_update(std::optional<int64_t> step, std::optional<int64_t> epoch) const {
    if (!o_.decay) return step.has_value();
    if (step && (!o_.update_starting_at_step || *step >= *o_.update_starting_at_step) &&
        o_.update_every_n_steps > 0 && *step % o_.update_every_n_steps == 0)
      return true;
    return epoch && o_.update_starting_at_epoch && *epoch >= *o_.update_starting_at_epoch;
  }

  // The update due after the last optimizer step, unless it was made.
  void catch_up(FitState& s) {
    if (s.global_step > latest_update_step_ && should_update(s.global_step - 1, std::nullopt)) {
      update(s);
      latest_update_step_ = s.global_step;
    }
  }

  // Where the average lives, refused before the fit reads its data rather than at the
  // first update (torch's "Invalid device string", "PyTorch is not linked with support for
  // cuda devices"): cpu, cuda or cuda:N of a card this process has.
  void check_device(const std::string& device) const {
    const std::string refused = name_ + ": device '" + device + "' ";
    std::optional<torch::Device> parsed;
    try {
      parsed.emplace(device);
    } catch (const c10::Error&) {
      throw UsageError(refused + "is not cpu, cuda or cuda:N");
    }
    if (!parsed->is_cuda()) return;
    const auto cards = torch::cuda::is_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
    if (cards == 0) throw UsageError(refused + "names a card, and this process has none: use cpu or leave it out");
    if (parsed->has_index() && parsed->index() >= cards)
      throw UsageError(refused + "names card " + std::to_string(parsed->index()) + ", and this process has " +
                       std::to_string(cards) + " (cuda:0 to cuda:" + std::to_string(cards - 1) + ")");
  }

  // The words a device may start with; the rest is torch's to parse (check_device).
  static bool device_word(const std::string& device) { return device == "cpu" || device.rfind("cuda", 0) == 0; }

  // The model's parameters then buffers, in AveragedModel's order.
  static std::vector<torch::Tensor> model_tensors(FitState& s) {
    std::vector<torch::Tensor> out;
    for (auto& p : s.setup->model->parameters(true)) out.push_back(p);
    for (auto& b : s.setup->model->buffers(true)) out.push_back(b);
    return out;
  }

  void ensure_average(FitState& s) {
    if (!average_.empty()) return;
    torch::NoGradGuard no_grad;
    params_ = static_cast<std::size_t>(s.setup->model->parameters(true).size());
    for (const auto& t : model_tensors(s))
      average_.push_back(o_.device ? t.detach().to(torch::Device(*o_.device)).clone() : t.detach().clone());
  }

  void update(FitState& s) {
    torch::NoGradGuard no_grad;
    if (swapped_) swap(s);  // never inside a validation; kept safe
    const auto model = model_tensors(s);
    for (std::size_t i = 0; i < model.size(); ++i) {
      auto& avg = average_[i];
      const auto current = model[i].detach().to(avg.device());
      const bool averaged = i < params_ || o_.use_buffers;
      if (n_averaged_ == 0 || !averaged || !avg.is_floating_point()) avg.copy_(current);
      else if (o_.decay) avg.copy_(avg.mul(*o_.decay).add(current.mul(1 - *o_.decay)));
      else avg.lerp_(current, 1.0 / static_cast<double>(n_averaged_ + 1));
    }
    ++n_averaged_;
  }

  void swap(FitState& s) {
    torch::NoGradGuard no_grad;
    const auto model = model_tensors(s);
    for (std::size_t i = 0; i < model.size(); ++i) {
      auto held = average_[i].clone();
      average_[i].copy_(model[i]);
      model[i].copy_(held);
    }
    swapped_ = !swapped_;
  }

  std::string name_;
  AveragingOptions o_;
  std::vector<torch::Tensor> average_;  // parameters, then buffers
  std::size_t params_ = 0;
  int64_t n_averaged_ = 0, latest_update_step_ = 0, latest_update_epoch_ = -1;
  bool swapped_ = false;  // the model holds the average (during a validation)
};

const bool kWeightAveragingRegistered = register_callback(
    {{"lightning.pytorch.callbacks.WeightAveraging", "callback", weight_averaging_binding().type(),
      "The running mean of the weights after every optimizer step; validation and the checkpoints' state_dict use it.",
      config::Support::kFull, "", {"pytorch_lightning.callbacks.WeightAveraging"}},
     [](const YAML::Node& args) {
       return std::make_unique<WeightAveraging>("WeightAveraging", weight_averaging_binding().read(args));
     }});

const bool kEmaWeightAveragingRegistered = register_callback(
    {{"lightning.pytorch.callbacks.EMAWeightAveraging", "callback", ema_binding().type(),
      "An exponential moving average of the weights; validation and the checkpoints' state_dict use it.",
      config::Support::kFull, "", {"pytorch_lightning.callbacks.EMAWeightAveraging"}},
     [](const YAML::Node& args) {
       return std::make_unique<WeightAveraging>("EMAWeightAveraging", ema_binding().read(args));
     }});

}  // namespace
}  // namespace salt::callbacks
