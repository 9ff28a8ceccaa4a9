// The top level of a salt config and its `trainer`, `data` and `model` sections.
// Key names, types and defaults follow salt (LightningCLI + jsonargparse), so
// salt's own config files and the config.yaml salt writes into its run
// directories are accepted as they are.
#include "config/schema.h"

namespace salt::config {
namespace {

TypeP int_or_float() { return t_union({t_int(), t_float()}); }

TypeP trainer_type() {
  const char* no_sanity = "salt-cpp runs no sanity-check validation before training";
  return t_struct({
      field("accelerator", t_choice({"auto", "cpu", "gpu", "cuda"}), "auto",
            "Where to train: cpu, gpu (CUDA) or auto (gpu when the LibTorch build and the machine have one)."),
      field("strategy", t_str(), "auto", "Lightning's strategy name.")
          .ignored("salt-cpp always uses one process per device with c10d data parallelism"),
      field("devices", t_union({t_int(), t_list(t_int()), t_str()}), "auto",
            "Number of devices, a list of GPU indices, or 'auto'."),
      field("num_nodes", at_least(t_int(), 1), 1, "Number of nodes for multi-node training."),
      field("precision", t_union({t_int(), t_str()}), "32-true",
            "32, 16-mixed, bf16-mixed (16-mixed becomes bf16-mixed on CPU)."),
      field_null("logger", t_union({t_component("logger"), t_bool(), t_null()}),
                 "Experiment logger; metrics always go to <run>/metrics.csv."),
      field_null("callbacks", t_optional(t_list(t_component("callback"))), "Callbacks (checkpointing, progress, ...)."),
      field("fast_dev_run", t_union({t_int(), t_bool()}), false,
            "Smoke test: run N train and N val batches, write nothing (true = 1)."),
      field_null("max_epochs", t_optional(at_least(t_int(), -1)), "Stop after this many epochs (null: 1000, unless max_steps is set)."),
      field_null("min_epochs", t_optional(t_int()), "Minimum number of epochs.")
          .ignored("there is no early stopping, so every run trains max_epochs"),
      field("max_steps", at_least(t_int(), -1), -1, "Stop after this many optimizer steps (-1: no limit)."),
      field_null("min_steps", t_optional(t_int()), "Minimum number of steps.")
          .ignored("there is no early stopping, so every run trains max_epochs"),
      field_null("max_time", t_any(), "Wall-time limit.").unsupported("use the batch system's time limit with --requeue"),
      field_null("limit_train_batches", t_optional(int_or_float()),
                 "Train batches per epoch: an int count or a fraction (null: all)."),
      field_null("limit_val_batches", t_optional(int_or_float()),
                 "Validation batches per epoch: an int count or a fraction (null: all)."),
      field_null("limit_test_batches", t_optional(int_or_float()), "Test batches: an int count or a fraction."),
      field_null("limit_predict_batches", t_optional(int_or_float()), "Predict batches.")
          .ignored("prediction uses limit_test_batches"),
      field("overfit_batches", int_or_float(), 0, "Overfit on a few batches.").unsupported("use --data.num_train instead"),
      field_null("val_check_interval", t_optional(int_or_float()), "Validate within an epoch.")
          .unsupported("salt-cpp validates once per epoch"),
      field("check_val_every_n_epoch", t_optional(at_least(t_int(), 1)), 1, "Validate every N epochs."),
      field_null("num_sanity_val_steps", t_optional(t_int()), "Sanity validation steps.").ignored(no_sanity),
      field("log_every_n_steps", t_optional(at_least(t_int(), 1)), 50, "Log training metrics every N steps."),
      field_null("enable_checkpointing", t_optional(t_bool()), "Write checkpoints (null: yes)."),
      field_null("enable_progress_bar", t_optional(t_bool()), "Show a progress bar (null: yes)."),
      field_null("enable_model_summary", t_optional(t_bool()), "Print the model summary (null: yes)."),
      field("accumulate_grad_batches", at_least(t_int(), 1), 1, "Accumulate gradients over N batches before each optimizer step."),
      field_null("gradient_clip_val", t_optional(at_least(int_or_float(), 0)), "Clip gradients at this value (null: no clipping)."),
      field_null("gradient_clip_algorithm", t_optional(t_choice({"norm", "value"})), "Clip by 'norm' (default) or 'value'."),
      field_null("deterministic", t_optional(t_union({t_bool(), t_str()})),
                 "Use deterministic algorithms (bitwise-reproducible runs, slower on GPU)."),
      field_null("benchmark", t_optional(t_bool()), "cuDNN benchmark mode.").ignored("salt-cpp uses no cuDNN convolutions"),
      field("inference_mode", t_bool(), true, "Use inference mode for evaluation."),
      field("use_distributed_sampler", t_bool(), true, "Shard batches across processes.")
          .ignored("salt-cpp always shards its weakly-shuffled batches across processes"),
      field_null("profiler", t_any(), "Profiler.").unsupported("not available in salt-cpp"),
      field("detect_anomaly", t_bool(), false, "Autograd anomaly detection.").ignored("not available in salt-cpp"),
      field("barebones", t_bool(), false, "Lightning barebones mode.").ignored("salt-cpp has no such overhead to remove"),
      field_null("plugins", t_any(), "Lightning plugins.").unsupported("not available in salt-cpp"),
      field("sync_batchnorm", t_bool(), false, "Synchronise batch norm.").ignored("salt's models have no batch norm"),
      field("reload_dataloaders_every_n_epochs", t_int(), 0, "Rebuild loaders every N epochs.")
          .ignored("loaders are reused across epochs"),
      field_null("default_root_dir", t_optional(t_path()), "Where run directories are created (null: logs)."),
      field_null("model_registry", t_optional(t_str()), "Lightning model registry.").ignored("not available in salt-cpp"),
  });
}

TypeP data_type() {
  const char* maskformer = "MaskFormer models are not supported by salt-cpp";
  return t_struct({
      field_node("variables", t_dict(t_list(t_str())), YAML::Node(YAML::NodeType::Map),
                 "Input variables per input type, e.g. {jets: [pt_btagJes, ...], tracks: [d0, ...]}; "
                 "their order is the model's column order."),
      field("global_object", t_str(), "jets", "The global object (one per row) that other inputs belong to."),
      required("train_file", t_path(), "Training HDF5 file from the preprocessing."),
      required("val_file", t_path(), "Validation HDF5 file."),
      field_null("test_file", t_optional(t_path()), "Test HDF5 file for `salt test`."),
      required("norm_dict", t_path(), "norm_dict.yaml: {input: {variable: {mean, std}}}."),
      field_null("class_dict", t_optional(t_path()), "class_dict.yaml: class weights for tasks with use_class_dict."),
      field_null("input_map", t_optional(t_dict(t_str())), "Input name -> HDF5 dataset name (null: identical)."),
      field_null("num_inputs", t_optional(t_dict(t_int())), "Keep only the first N constituents, e.g. {tracks: 10}."),
      required("batch_size", at_least(t_int(), 1), "Jets per batch (per process)."),
      required("num_workers", at_least(t_int(), 0), "Loader threads decoding batches ahead (0: load in the training thread)."),
      field("num_train", at_least(t_int(), -1), -1, "Use the first N training jets (-1: all)."),
      field("num_val", at_least(t_int(), -1), -1, "Use the first N validation jets (-1: all)."),
      field("num_test", at_least(t_int(), -1), -1, "Use the first N test jets (-1: all)."),
      field_null("move_files_temp", t_optional(t_path()),
                 "Copy train/val files into this directory (e.g. /dev/shm/<user>/salt) for the run."),
      field_null("test_suff", t_optional(t_str()), "Suffix for the prediction file name."),
      field("pin_memory", t_bool(), true, "Pin host memory of batches when training on a GPU."),
      field("persistent_workers", t_bool(), true, "Keep loader threads alive between epochs."),
      field("prefetch_factor", at_least(t_int(), 1), 2, "Batches each loader thread decodes ahead."),
      field_null("multiprocessing_context", t_optional(t_str()), "Python multiprocessing start method.")
          .ignored("salt-cpp loads with threads, not processes"),
      field("non_finite_to_num", t_bool(), false, "Replace NaN/inf inputs by finite numbers instead of failing."),
      field("ignore_finite_checks", t_bool(), false, "Skip the check for non-finite inputs."),
      field_null("labels", t_optional(t_dict(t_list(t_str()))), "Extra label variables to load per input type."),
      field_null("labeller_config", t_any(), "Relabelling config.").unsupported("not available in salt-cpp"),
      field_null("mf_config", t_any(), "MaskFormer config.").unsupported(maskformer),
      field_null("selections", t_any(), "Per-input selections.").unsupported("not available in salt-cpp"),
      field_null("parameters", t_any(), "Parameterised-training inputs.").unsupported("not available in salt-cpp"),
      field_null("transforms", t_any(), "Data augmentation transforms.").unsupported("not available in salt-cpp"),
      field("recover_malformed", t_bool(), false, "Recover malformed files.").ignored("not needed by the C++ reader"),
      field_null("train_vds_path", t_any(), "Virtual dataset of many train files.").unsupported("merge files first"),
      field_null("val_vds_path", t_any(), "Virtual dataset of many val files.").unsupported("merge files first"),
      field_null("test_vds_path", t_any(), "Virtual dataset of many test files.").unsupported("merge files first"),
      field_null("config_s3", t_any(), "S3 storage config.").unsupported("read files from a file system"),
      field_null("edge_constructors", t_any(), "Edge feature constructors.").unsupported("not available in salt-cpp"),
      field_null("multi_target", t_any(), "Multi-target regression config.").unsupported("not available in salt-cpp"),
  });
}

TypeP lrs_config_type() {
  return t_struct({
      required("initial", t_float(), "Learning rate at the start of the one-cycle schedule."),
      required("max", t_float(), "Peak learning rate."),
      required("end", t_float(), "Learning rate at the end."),
      required("pct_start", t_float(), "Fraction of the steps spent increasing the learning rate."),
      field("weight_decay", at_least(t_float(), 0), 1e-5, "AdamW weight decay (applied to all parameters)."),
      field("last_epoch", t_int(), -1, "OneCycleLR's last_epoch, for resuming past the planned total."),
  });
}

TypeP model_section_type() {
  return t_struct({
      required("model", t_component("model"), "The network: salt.models.SaltModel with its init_args."),
      required("lrs_config", lrs_config_type(), "AdamW + OneCycleLR settings."),
      field("global_object", t_str(), "jets", "Linked from data.global_object."),
      field_null("norm_config", t_any(), "Filled in from data.norm_dict at fit time."),
      field("name", t_str(), "salt", "Linked from the top-level name."),
      field_null("mup_config", t_any(), "muP scaling config.").unsupported("muP is not available in salt-cpp"),
      field("loss_mode", t_choice({"wsum", "GLS"}), "wsum",
            "Combine task losses as a weighted sum, or GLS (geometric mean; all task weights must be 1)."),
      field("optimizer", t_choice({"AdamW"}), "AdamW", "Optimizer (salt-cpp implements AdamW)."),
      field_null("edge_constructors", t_any(), "Edge feature constructors.").unsupported("not available in salt-cpp"),
  });
}

}  // namespace

TypeP root_type() {
  static const TypeP root = t_struct({
      field("seed_everything", t_union({t_int(), t_bool()}), true,
            "Seed for every random generator; true draws one and records it in the run's config.yaml."),
      field("name", t_str(), "salt", "Run name: prefixes output columns (<name>_pb) and names the run directory."),
      field_null("ckpt_path", t_optional(t_path()), "Checkpoint to resume training from, or to test."),
      field("force", t_bool(), false, "Run with uncommitted changes (and do not tag)."),
      field("tag", t_bool(), false, "Create an annotated git tag named after the run directory and push it."),
      field("compile", t_bool(), false, "torch.compile the model.")
          .ignored("LibTorch C++ has no torch.compile; the model runs eagerly"),
      field("overwrite_config", t_bool(), false, "Allow overwriting an existing config.yaml in the run directory."),
      field_null("log_suffix", t_optional(t_str()), "Run directory <name>_<log_suffix> instead of a timestamp."),
      field_node("trainer", trainer_type(), YAML::Node(YAML::NodeType::Map), "Training loop settings (Lightning's Trainer)."),
      required("data", data_type(), "Input files, variables and loading."),
      required("model", model_section_type(), "Network, losses and optimiser."),
  });
  return root;
}

}  // namespace salt::config
