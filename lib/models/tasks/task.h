// The base of salt's task heads: a Dense `net`, a `loss` module and a loss weight.
// A task runs at jet level (on the pooled vector, input_name == global object) or
// at constituent level (on each constituent embedding, with the pooled vector as
// the Dense context, concatenated first).
#pragma once
#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "config/bind.h"
#include "models/layers/dense.h"
#include "models/packing/common.h"
#include "models/tasks/loss.h"

#include "export/fwd.h"

namespace salt::models {

struct TaskOptions {
  TaskOptions(std::string name, std::string input_name, DenseOptions dense, LossOptions loss)
      : name_(std::move(name)), input_name_(std::move(input_name)), dense_(std::move(dense)), loss_(std::move(loss)) {}
  TORCH_ARG(std::string, name);
  TORCH_ARG(std::string, input_name);
  TORCH_ARG(DenseOptions, dense);
  TORCH_ARG(LossOptions, loss);
  TORCH_ARG(double, weight) = 1.0;
  // salt's sample_weight (Classification and Regression tasks): a variable of
  // input_name whose values multiply the unreduced loss.
  TORCH_ARG(std::optional<std::string>, sample_weight) = std::nullopt;

 public:
  std::string sample_weight_key;  // its config key, for messages (set by the builder)
};

struct TaskOutput {
  torch::Tensor preds;  // raw network output (logits, edge logits, scaled regression)
  torch::Tensor loss;   // weighted scalar loss; undefined without labels
};

// Inference columns in salt's output order; values [B, N] (jet level) or
// [B, L, N] (constituents), float32 (probabilities, regression) or int64 (VertexIndex).
struct PredictionColumns {
  std::vector<std::string> names;
  torch::Tensor values;
};

// What a task's ONNX export gets for one jet (graph values): x is the pooled
// vector [1, D] for jet-level tasks or the constituents' encodings [n, D] with the
// pooled vector as context; raw_global: the un-normalised global object [1, F]
// whose columns are global_variables (regression denominators read it).
struct OnnxTaskInput {
  ox::Value x, context, raw_global;
  const std::vector<std::string>* global_variables = nullptr;
};

// One output of the exported graph: a float scalar (jet level) or, per constituent,
// an int8 vector [n] (per_constituent).
struct OnnxOutput {
  std::string name;
  ox::Value value;
  bool per_constituent = false;
  bool object = false;      // a MaskFormer object output (models/maskformer/maskformer_outputs.h)
  std::string task, input;  // filled by SaltModel::to_onnx: the task and its input
  int64_t column = 0;       // index among the task's outputs
};

class TaskImpl : public torch::nn::Module {
 public:
  TaskImpl(const std::string& type, const TaskOptions& options);

  // x: [B, D] at jet level (pad_mask, context undefined), or [B, L, D] with
  // pad_mask bool [B, L] (true = padded) and context [B, C] for constituents.
  // labels == nullptr: inference, no loss. forward_context: the model's forward
  // pass's (forward_context.h): the labels' host copies, static rows, kernels.
  virtual TaskOutput forward(const torch::Tensor& x, const torch::Tensor& pad_mask, const torch::Tensor& context,
                             const Labels* labels, const ForwardContext& forward_context) = 0;
  // A constituent task on packed tokens: rows [N, D] are the valid slots `idx` of
  // the padded [B, L] input (pad_mask), context [B, C]. Same preds and loss as
  // forward() (per-constituent preds are [B, L, ...] with 0 at padded slots). The
  // default scatters rows back to [B, L, D] and calls forward().
  virtual TaskOutput forward_packed(const torch::Tensor& rows, const TokenIndex& idx, const torch::Tensor& pad_mask,
                                    const torch::Tensor& context, const Labels* labels,
                                    const ForwardContext& forward_context);
  // salt's run_inference + output naming. labels are only needed by regression
  // tasks scaled by target_denominators. model_name prefixes most columns.
  virtual PredictionColumns predict(const torch::Tensor& preds, const torch::Tensor& pad_mask, const Labels* labels,
                                    const std::string& model_name) const = 0;
  // salt's get_onnx: this task's outputs for one jet, named as salt's exporter
  // names them. The default refuses (UsageError naming the task).
  virtual std::vector<OnnxOutput> to_onnx(ox::Graph& g, const OnnxTaskInput& in, const std::string& model_name);
  // The label (or target) names this task reads from labels[input_name()].
  virtual std::vector<std::string> label_names() const = 0;
  // Before a CUDA graph replays a step captured on another batch (whose host-side
  // checks and branches then do not run): throws, as forward would, for a label
  // forward refuses, and says whether forward would take the path it takes for
  // an ordinary batch. Reads the labels' host copies among `twins` (host_twins.h).
  // The default: nothing to check.
  virtual bool labels_replayable(const Labels& labels, const torch::Tensor& pad_mask, const HostTwins& twins) const;

  const std::string& name() const { return options_.name(); }
  const std::string& input_name() const { return options_.input_name(); }
  double weight() const { return options_.weight(); }
  const std::optional<std::string>& sample_weight() const { return options_.sample_weight(); }
  const std::string& sample_weight_key() const { return options_.sample_weight_key; }

  Dense net{nullptr};
  Loss loss{nullptr};

 protected:
  // labels[input_name()][label]; InputError naming the task if absent.
  const torch::Tensor& label(const Labels& labels, const std::string& name) const;
  // The sample weights as float32 (undefined without sample_weight).
  torch::Tensor sample_weights(const Labels& labels) const;
  TaskOptions options_;
};

struct BuildContext;

// What every task's config holds (salt's TaskBase arguments). A task's config
// struct derives from it, its binding starts with bind_task_base() and its
// builder calls finish_task_base().
struct TaskBaseConfig {
  TaskOptions task{"", "", DenseOptions(-1), LossOptions()};
  config::ComponentNode loss;  // built by finish_task_base
};

template <class C>
void bind_task_base(config::Binding<C>& b) {
  using namespace config;
  b.required("name", [](C& c) -> auto& { return c.task.name(); }, "Task name; losses are logged as train/<name>_loss.")
      .required("input_name", [](C& c) -> auto& { return c.task.input_name(); },
                "Input type the task predicts for (the global object or a constituent type).")
      .required_struct("dense_config", [](C& c) -> auto& { return c.task.dense(); }, dense_binding(),
                       "The task head (salt.models.Dense arguments).")
      .required("loss", [](C& c) -> auto& { return c.loss; }, "Loss, e.g. torch.nn.CrossEntropyLoss.",
                t_component("loss"))
      .arg("weight", [](C& c) -> auto& { return c.task.weight(); }, "Weight of this task's loss in the total.");
}

// Checks input_name against the model, derives (or checks) the head's input and
// context sizes from what the task receives (pairwise: two constituents, as
// vertexing), and builds the loss.
void finish_task_base(TaskBaseConfig& c, const BuildContext& ctx, bool pairwise = false);

// Binds `sample_weight` (salt's Classification and Regression tasks have it).
template <class C>
void bind_sample_weight(config::Binding<C>& b) {
  b.arg("sample_weight", [](C& c) -> auto& { return c.task.sample_weight(); },
        "Per-sample weight variable of input_name: multiplies the unreduced loss before the mean (needs the "
        "loss's reduction: none).");
}

// Records sample_weight's key and, like salt, requires the loss's reduction none.
void finish_sample_weight(TaskBaseConfig& c, const BuildContext& ctx);

}  // namespace salt::models
