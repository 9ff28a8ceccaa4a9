// salt's WeightLoggerCallback and GradientLoggerCallback: every log_every_n_steps
// global steps, the mean and standard deviation of each parameter's weights (after
// the step) or gradients (after the backward pass), logged under salt's names with
// the next train metrics (metrics.csv, TensorBoard):
//   weights_weights/<param>_mean, weights_weights/<param>_std
//   gradients_grad/<param>_mean, gradients_grad/<param>_std,
//   gradient_total_magnitude (sum of the gradients' L2 norms),
//   gradient_average_magnitude (that sum over the number of gradient entries).
// Beyond salt, each parameter's values also go to the TensorBoard logger as a
// histogram (weights/<param>, gradients/<param>). Rank 0 only; nothing under
// fast_dev_run, as in salt.
#include "training/callback_registry.h"

namespace salt::callbacks {
namespace {

struct ParameterLoggerOptions {
  int64_t log_every_n_steps = 50;
};

const config::Binding<ParameterLoggerOptions>& parameter_loggers_binding() {
  static const auto b = config::Binding<ParameterLoggerOptions>({}).arg(
      "log_every_n_steps", SALT_FIELD(log_every_n_steps), "Log every n global steps.",
      config::at_least(config::t_int(), 1));
  return b;
}

std::vector<double> values_of(const torch::Tensor& t) {
  auto flat = t.detach().to(torch::kCPU, torch::kFloat64).contiguous().view({-1});
  return {flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel()};
}

class ParameterLogger : public Callback {
 public:
  enum class Kind { kWeights, kGradients };
  ParameterLogger(Kind kind, ParameterLoggerOptions o) : kind_(kind), o_(o) {}

  void on_after_backward(FitState& s) override {
    if (kind_ == Kind::kGradients && due(s)) log_gradients(s);
  }
  // Lightning's on_train_batch_end sees the global step after the optimizer step.
  void on_batch_end(FitState& s, const std::string& stage, int64_t, const torch::Tensor&, int64_t) override {
    if (kind_ == Kind::kWeights && stage == "train" && due(s)) log_weights(s);
  }
  void add_step_metrics(FitState&, Metrics& m) override {
    m.insert(pending_.begin(), pending_.end());
    pending_.clear();
  }

 private:
  bool due(const FitState& s) const {
    return !s.dev_run && s.process.main_rank && s.global_step % o_.log_every_n_steps == 0 && s.global_step != last_step_;
  }

  void log_weights(FitState& s) {
    last_step_ = s.global_step;
    torch::NoGradGuard no_grad;
    for (const auto& p : s.setup->model->named_parameters()) {
      const auto& name = p.key();
      if (name.find("weight") == std::string::npos && name.find("bias") == std::string::npos) continue;
      pending_["weights_weights/" + name + "_mean"] = p.value().mean().item<double>();
      pending_["weights_weights/" + name + "_std"] = p.value().std().item<double>();
      if (s.actions.log_histogram) s.actions.log_histogram("weights/" + name, values_of(p.value()));
    }
  }

  void log_gradients(FitState& s) {
    last_step_ = s.global_step;
    torch::NoGradGuard no_grad;
    double total = 0;
    int64_t entries = 0;
    for (const auto& p : s.setup->model->named_parameters()) {
      const auto& grad = p.value().grad();
      if (!grad.defined()) continue;  // salt logs None: no value in the table
      const auto& name = p.key();
      total += grad.norm().item<double>();
      entries += grad.numel();
      pending_["gradients_grad/" + name + "_mean"] = grad.mean().item<double>();
      pending_["gradients_grad/" + name + "_std"] = grad.std().item<double>();
      if (s.actions.log_histogram) s.actions.log_histogram("gradients/" + name, values_of(grad));
    }
    if (entries > 0) {
      pending_["gradient_total_magnitude"] = total;
      pending_["gradient_average_magnitude"] = total / static_cast<double>(entries);
    }
  }

  Kind kind_;
  ParameterLoggerOptions o_;
  Metrics pending_;
  int64_t last_step_ = -1;  // accumulated batches share a global step: once per step
};

const bool kParameterLoggersRegistered =
    register_callback({{"salt.callbacks.WeightLoggerCallback", "callback", parameter_loggers_binding().type(),
                        "Logs each parameter's mean and std (and a TensorBoard histogram) every n steps.",
                        config::Support::kFull, "", {"salt.callbacks.weight_logger.WeightLoggerCallback"}},
                       [](const YAML::Node& args) {
                         return std::make_unique<ParameterLogger>(ParameterLogger::Kind::kWeights, parameter_loggers_binding().read(args));
                       }}) &&
    register_callback({{"salt.callbacks.GradientLoggerCallback", "callback", parameter_loggers_binding().type(),
                        "Logs each gradient's mean and std, their total and average magnitude (and a TensorBoard "
                        "histogram) every n steps.",
                        config::Support::kFull, "", {"salt.callbacks.gradient_logger.GradientLoggerCallback"}},
                       [](const YAML::Node& args) {
                         return std::make_unique<ParameterLogger>(ParameterLogger::Kind::kGradients, parameter_loggers_binding().read(args));
                       }});

}  // namespace
}  // namespace salt::callbacks
