// Every component a salt config can name by class_path, with its init_args.
// Argument names and defaults follow salt's Python classes (salt/models/*.py,
// salt/callbacks/*.py) and the torch/Lightning classes salt configs use.
#include "config/schema.h"

namespace salt::config {
namespace {

const std::vector<std::string>& activations() {
  static const std::vector<std::string> names{"ReLU",     "SiLU",        "Mish",     "GELU",    "LeakyReLU", "ELU",
                                              "SELU",     "CELU",        "Tanh",     "Sigmoid", "Softplus",  "Softsign",
                                              "Hardswish", "Hardsigmoid", "Hardtanh", "Identity", "LogSigmoid"};
  return names;
}

TypeP activation() { return t_choice(activations()); }

TypeP str_or_list() { return t_union({t_str(), t_list(t_str())}); }

// salt.models.Dense arguments, used by init nets and task heads.
TypeP dense_config() {
  return t_struct({
      field_null("input_size", t_optional(t_int()), "Input features (init nets: derived from data.variables when null)."),
      field_null("output_size", t_optional(t_int()), "Output features (null: input_size)."),
      field_null("hidden_layers", t_optional(t_list(t_int())), "Sizes of the hidden layers (null: [input_size * hidden_dim_scale])."),
      field("hidden_dim_scale", t_int(), 2, "Hidden size multiplier when hidden_layers is null."),
      field("activation", activation(), "ReLU", "Activation after each hidden layer (torch.nn class name)."),
      field_null("final_activation", t_optional(activation()), "Activation after the output layer (null: none)."),
      field("dropout", t_float(), 0.0, "Dropout after each hidden activation."),
      field("bias", t_bool(), true, "Linear layers have a bias."),
      field("context_size", t_int(), 0, "Size of a context vector concatenated before the input."),
      field("mup", t_bool(), false, "muP scaling.").unsupported("muP is not available in salt-cpp"),
  });
}

TypeP init_net() {
  return t_struct({
      required("input_name", t_str(), "Input type this net embeds (a key of data.variables)."),
      required("dense_config", dense_config(), "The Dense network (salt.models.Dense arguments)."),
      field("attach_global", t_bool(), true, "Concatenate the global object's variables to each constituent first."),
      field_null("variables", t_any(), "Filled in from data.variables (salt writes it into saved configs)."),
      field_null("global_object", t_optional(t_str()), "Filled in from data.global_object."),
      field_null("pos_enc", t_any(), "Positional encoding.").unsupported("not available in salt-cpp"),
      field_null("featurewise", t_any(), "Featurewise transformation.").unsupported("not available in salt-cpp"),
      field("mup", t_bool(), false, "muP scaling.").unsupported("muP is not available in salt-cpp"),
  });
}

TypeP glu_kwargs() {
  return t_struct({
      field_null("hidden_dim", t_optional(t_int()), "GLU hidden size (null: 2 * embed_dim)."),
      field("activation", activation(), "SiLU", "GLU activation."),
      field("dropout", t_float(), 0.0, "Dropout inside the GLU."),
      field("bias", t_bool(), true, "GLU linear layers have a bias."),
      field("gated", t_bool(), false, "Gated GLU: act(a) * b from a doubled in_proj."),
      field("mup", t_bool(), false, "muP scaling.").unsupported("muP is not available in salt-cpp"),
  });
}

TypeP attn_kwargs() {
  return t_struct({
      field("num_heads", t_int(), 1, "Attention heads (must divide embed_dim)."),
      field_null("attn_type", t_optional(t_str()), "Set from the encoder's attn_type."),
      field("dropout", t_float(), 0.0, "Attention dropout."),
      field("bias", t_bool(), true, "Projections have a bias."),
      field("do_qk_norm", t_bool(), false, "LayerNorm on queries and keys.").unsupported("not available in salt-cpp"),
      field("do_v_norm", t_bool(), false, "LayerNorm on values.").unsupported("not available in salt-cpp"),
      field("mup", t_bool(), false, "muP scaling.").unsupported("muP is not available in salt-cpp"),
  });
}

TypeP transformer_args() {
  return t_struct({
      required("num_layers", t_int(), "Number of encoder layers."),
      required("embed_dim", t_int(), "Token embedding size."),
      field_null("out_dim", t_optional(t_int()), "Output projection size (null: embed_dim)."),
      field("norm", t_choice({"LayerNorm"}), "LayerNorm", "Normalisation layer (no affine parameters, as in salt)."),
      field("attn_type", t_choice({"torch-math", "torch-flash", "torch-meff", "flash-varlen"}), "torch-math",
            "Attention kernel; changes speed, never the result."),
      field("do_final_norm", t_bool(), true, "LayerNorm after the output projection."),
      field("num_registers", t_int(), 1, "Learnable register tokens appended to every sequence (at least 1)."),
      field("drop_registers", t_bool(), false, "Drop the registers from the encoder output."),
      field_null("ls_init", t_optional(t_float()), "LayerScale init value.").unsupported("LayerScale is not available in salt-cpp yet"),
      field("drop_path", t_float(), 0.0, "Stochastic depth rate.").unsupported("stochastic depth is not available in salt-cpp yet"),
      field("depth", t_int(), 1, "Layer depth (LayerScale/drop-path scaling)."),
      field_null("dense_kwargs", t_optional(glu_kwargs()), "Arguments of each layer's GLU."),
      field_null("attn_kwargs", t_optional(attn_kwargs()), "Arguments of each layer's attention."),
      field("norm_type", t_choice({"pre", "post"}), "pre", "Pre-norm (x + f(norm(x))) or post-norm residuals."),
      field("num_dense", t_int(), 1, "Dense blocks per layer.").unsupported("salt-cpp has one GLU per layer"),
      field("edge_embed_dim", t_int(), 0, "Edge features.").unsupported("edge features are not available in salt-cpp"),
      field("update_edges", t_bool(), false, "Update edge features.").unsupported("edge features are not available in salt-cpp"),
      field("mup", t_bool(), false, "muP scaling.").unsupported("muP is not available in salt-cpp"),
  });
}

std::vector<Field> task_base_fields() {
  return {
      required("name", t_str(), "Task name; losses are logged as train/<name>_loss."),
      required("input_name", t_str(), "Input type the task predicts for (the global object or a constituent type)."),
      required("dense_config", dense_config(), "The task head (salt.models.Dense arguments)."),
      required("loss", t_component("loss"), "Loss, e.g. torch.nn.CrossEntropyLoss."),
      field("weight", t_float(), 1.0, "Weight of this task's loss in the total."),
  };
}

TypeP with_fields(std::vector<Field> base, std::vector<Field> extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return t_struct(std::move(base));
}

TypeP regression_args() {
  return with_fields(task_base_fields(),
                     {
                         required("targets", str_or_list(), "Regression target label(s)."),
                         field_null("scaler", t_any(), "Target scaler.").unsupported("use norm_params or target_denominators"),
                         field_null("target_denominators", t_optional(str_or_list()), "Divide each target by this variable."),
                         field_null("norm_params", t_optional(t_dict(t_union({t_float(), t_list(t_float())}))),
                                    "{mean, std} to standardise the targets."),
                         field_null("custom_output_names", t_optional(str_or_list()), "Output column names."),
                         field_null("sample_weight", t_optional(t_str()), "Per-sample weight variable.")
                             .unsupported("per-sample weights are not available in salt-cpp yet"),
                     });
}

TypeP reduction() { return t_choice({"mean", "sum", "none"}); }

TypeP open_args() { return t_dict(t_any()); }

void add_models(ComponentRegistry& r) {
  r.add({"salt.models.SaltModel", "model",
         t_struct({
             required("init_nets", t_list(init_net()), "One init net per input type, in concatenation order."),
             required("tasks", t_component("task_list"), "torch.nn.ModuleList of tasks."),
             field_null("encoder", t_optional(t_component("encoder")), "Encoder over constituents (null: deep sets)."),
             field_null("pool_net", t_optional(t_component("pooling")), "Pooling to the global object (null: no pooling)."),
             field_null("edge_init_nets", t_any(), "Edge init nets.").unsupported("edge features are not available in salt-cpp"),
             field_null("mask_decoder", t_any(), "MaskFormer decoder.").unsupported("MaskFormer models are not supported by salt-cpp"),
             field_null("merge_dict", t_any(), "Merge input types.").unsupported("not available in salt-cpp"),
             field_null("featurewise_nets", t_any(), "Featurewise nets.").unsupported("not available in salt-cpp"),
         }),
         "Init nets -> encoder -> pooling -> tasks."});
  r.add({"salt.models.Transformer", "encoder", transformer_args(), "Pre-norm transformer encoder with registers.",
         Support::kFull, "", {"salt.models.transformer.Transformer"}});
  r.add({"salt.models.TransformerV2", "encoder", transformer_args(), "Same as salt.models.Transformer (salt's alias).",
         Support::kFull, "", {"salt.models.transformer_v2.TransformerV2"}});
  r.add({"salt.models.GlobalAttentionPooling", "pooling",
         t_struct({required("input_size", t_int(), "Embedding size of the constituents.")}),
         "Softmax-weighted sum over valid constituents and registers."});
  r.add({"torch.nn.ModuleList", "task_list",
         t_struct({required("modules", t_list(t_component("task")), "The tasks.")}), "The list of tasks."});
}

void add_tasks(ComponentRegistry& r) {
  r.add({"salt.models.ClassificationTask", "task",
         with_fields(task_base_fields(),
                     {
                         required("label", t_str(), "Label variable of input_name."),
                         field_null("class_names", t_optional(t_list(t_str())),
                                    "Class names (null: the file's flavour_label attribute)."),
                         field_null("label_map", t_optional(t_dict(t_int(), t_int())), "Remap label values, e.g. {0: 0, 4: 1, 5: 2}."),
                         field_null("sample_weight", t_optional(t_str()), "Per-sample weight variable.")
                             .unsupported("per-sample weights are not available in salt-cpp yet"),
                         field("use_class_dict", t_bool(), false, "Take the loss's class weights from data.class_dict."),
                     }),
         "Jet- or constituent-level classification."});
  r.add({"salt.models.RegressionTask", "task", regression_args(), "Regression of one or more targets."});
  r.add({"salt.models.GaussianRegressionTask", "task", regression_args(), "Regression of a mean and a variance."});
  r.add({"salt.models.VertexingTask", "task",
         with_fields(task_base_fields(), {required("label", t_str(), "Vertex index label of input_name.")}),
         "Pairwise same-vertex classification of constituents."});
}

void add_losses(ComponentRegistry& r) {
  r.add({"torch.nn.CrossEntropyLoss", "loss",
         t_struct({
             field_null("weight", t_optional(t_list(t_float())), "Class weights."),
             field("ignore_index", t_int(), -100, "Label value to ignore (tasks set -1)."),
             field("reduction", reduction(), "mean", "mean, sum or none."),
             field("label_smoothing", t_float(), 0.0, "Label smoothing."),
         }),
         "Cross entropy on logits."});
  r.add({"torch.nn.BCEWithLogitsLoss", "loss",
         t_struct({
             field_null("weight", t_optional(t_list(t_float())), "Element weights."),
             field("reduction", reduction(), "mean", "mean, sum or none."),
             field_null("pos_weight", t_optional(t_list(t_float())), "Weight of positive examples."),
         }),
         "Binary cross entropy on logits."});
  r.add({"torch.nn.MSELoss", "loss", t_struct({field("reduction", reduction(), "mean", "mean, sum or none.")}),
         "Mean squared error."});
  r.add({"torch.nn.L1Loss", "loss", t_struct({field("reduction", reduction(), "mean", "mean, sum or none.")}),
         "Mean absolute error."});
  r.add({"torch.nn.GaussianNLLLoss", "loss",
         t_struct({
             field("full", t_bool(), false, "Include the constant term."),
             field("eps", t_float(), 1e-6, "Variance clamp."),
             field("reduction", reduction(), "mean", "mean, sum or none."),
         }),
         "Gaussian negative log likelihood."});
}

void add_callbacks(ComponentRegistry& r) {
  r.add({"salt.callbacks.Checkpoint", "callback",
         t_struct({
             required("monitor_loss", t_str(), "Metric in checkpoint names, e.g. val/jets_classification_loss."),
             field("fname_string", t_str(), "val_loss", "Its name in the file: epoch=NNN-<fname_string>=X.XXXXX.ckpt."),
         }),
         "Checkpoint after every validation into <run>/ckpts."});
  r.add({"salt.callbacks.PredictionWriter", "callback",
         t_struct({
             field("write_tracks", t_bool(), false, "Also write constituent-level outputs."),
             field("write_objects", t_bool(), false, "Write MaskFormer objects.").unsupported("MaskFormer models are not supported by salt-cpp"),
             field("half_precision", t_bool(), false, "Write predictions as float16."),
             field_null("object_classes", t_any(), "MaskFormer object classes.").unsupported("MaskFormer models are not supported by salt-cpp"),
             field_null("extra_vars", t_optional(t_dict(t_list(t_str()))), "Extra input-file variables to copy per input type."),
         }),
         "Writes `salt test` predictions to HDF5."});
  r.add({"lightning.pytorch.callbacks.LearningRateMonitor", "callback",
         t_struct({field_null("logging_interval", t_optional(t_choice({"step", "epoch"})), "When to log the learning rate."),
                   field("log_momentum", t_bool(), false, "Also log the momentum."),
                   field("log_weight_decay", t_bool(), false, "Also log the weight decay.")}),
         "Logs the learning rate to metrics.csv.", Support::kFull, "",
         {"pytorch_lightning.callbacks.LearningRateMonitor"}});
  r.add({"lightning.pytorch.callbacks.TQDMProgressBar", "callback",
         t_struct({field("refresh_rate", t_int(), 1, "Update the progress bar every N steps."),
                   field("process_position", t_int(), 0, "Terminal line of the bar.")}),
         "Progress bar on a terminal; plain lines otherwise.", Support::kFull, "",
         {"pytorch_lightning.callbacks.TQDMProgressBar"}});
  r.add({"lightning.pytorch.callbacks.ModelSummary", "callback",
         t_struct({field("max_depth", t_int(), 1, "Depth of modules in the summary.")}),
         "Prints each component with its parameter count.", Support::kFull, "",
         {"pytorch_lightning.callbacks.ModelSummary"}});
  for (const auto* name : {"salt.callbacks.GradientLoggerCallback", "salt.callbacks.WeightLoggerCallback",
                           "salt.callbacks.IntegratedGradientWriter", "salt.callbacks.ConfusionMatrixCallback"}) {
    r.add({name, "callback", open_args(), "salt callback.", Support::kIgnored, "is not available in salt-cpp; it is skipped"});
  }
}

void add_loggers(ComponentRegistry& r) {
  const char* csv = "is not available in salt-cpp; metrics are written to <run>/metrics.csv instead";
  r.add({"lightning.pytorch.loggers.CometLogger", "logger", open_args(), "Comet.ml logger.", Support::kIgnored, csv,
         {"lightning.pytorch.loggers.comet.CometLogger", "pytorch_lightning.loggers.CometLogger"}});
  r.add({"lightning.pytorch.loggers.TensorBoardLogger", "logger", open_args(), "TensorBoard logger.", Support::kIgnored,
         csv, {"pytorch_lightning.loggers.TensorBoardLogger"}});
  r.add({"lightning.pytorch.loggers.WandbLogger", "logger", open_args(), "Weights & Biases logger.", Support::kIgnored,
         csv, {"pytorch_lightning.loggers.WandbLogger"}});
  r.add({"lightning.pytorch.loggers.CSVLogger", "logger", open_args(), "CSV logger.", Support::kIgnored,
         "is built in: metrics are always written to <run>/metrics.csv", {"pytorch_lightning.loggers.CSVLogger"}});
}

}  // namespace

const ComponentRegistry& components() {
  static const ComponentRegistry registry = [] {
    ComponentRegistry r;
    add_models(r);
    add_tasks(r);
    add_losses(r);
    add_callbacks(r);
    add_loggers(r);
    return r;
  }();
  return registry;
}

}  // namespace salt::config
