// Checkpoints in Lightning's layout, in torch.save's format (lib/serialize) so that
// Python's `torch.load(path, weights_only=True)` opens them and salt/Lightning
// resume, test and export from them: `state_dict` (salt's key names),
// `optimizer_states` (optimizer.state_dict(): AdamW's or Lion's, or salt's
// HybridMuonAdamW {wrapper, muon, adamw, muon_names, adamw_names}, whose state
// keys are the parameters' model-order indices), `lr_schedulers`, `epoch`,
// `global_step`, `loops`, `callbacks`, `MixedPrecision` (16-mixed),
// `hparams_name` + `hyper_parameters` (LightningCLI's), plus a `salt_cpp` entry
// with what an exact resume needs (the resolved config, RNG state, batch within
// the epoch). Any checkpoint in Lightning's layout is read, salt's included.
// Files are written to a temp name and renamed.
#pragma once
#include <torch/torch.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serialize/py_value.h"
#include "training/optim/grad_scaler.h"

namespace salt::training {

// The Lightning release salt pins (its pyproject): checkpoints and metadata.yaml
// name it, since Lightning reads checkpoints by their Lightning version.
inline constexpr const char* kLightningVersion = "2.6.1";

class Optimization;

// One parameter's optimizer state. The name is historical: it holds the state of
// whichever optimizer steps the parameter, with the fields that optimizer has
// defined (torch's state_dict keys): AdamW step, exp_avg, exp_avg_sq; Lion
// exp_avg; Muon momentum_buffer. None defined: no state (yet).
struct AdamParamState {
  int64_t step = 0;
  torch::Tensor exp_avg, exp_avg_sq;
  torch::Tensor momentum_buffer;
  bool empty() const { return !exp_avg.defined() && !exp_avg_sq.defined() && !momentum_buffer.defined(); }
};

// How the run's epochs are cut, for the progress counters Lightning keeps.
struct LoopShape {
  int64_t train_batches = 0;  // per epoch
  int64_t val_batches = 0;    // per validation
  int64_t accumulate = 1;     // batches per optimizer step
};

// Lightning's WeightAveraging layout (EMAWeightAveraging): the checkpoint's
// state_dict holds the averaged weights, current_model_state those training goes
// on from, and averaging_state the AveragedModel's own entries (n_averaged). A
// weights-only save keeps the current weights in state_dict, as Lightning (its
// callbacks' on_save_checkpoint is not called then).
struct AveragedWeights {
  std::vector<std::pair<std::string, torch::Tensor>> current_model_state;
  std::vector<std::pair<std::string, torch::Tensor>> averaging_state;
};

struct CheckpointState {
  int64_t epoch = 0;        // the epoch the state belongs to (0-based, as Lightning)
  int64_t batch_in_epoch = -1;  // -1: saved after the epoch's validation; else training batches done in `epoch`
  int64_t global_step = 0;  // optimizer steps taken
  std::string config_yaml;  // the run's resolved config
  std::string run_config_yaml;  // its config.yaml (salt-readable); hyper_parameters come from it when set
  std::string hparams_config_yaml;  // read: a config rebuilt from LightningCLI's hyper_parameters, if any
  LoopShape loop_shape;
  std::vector<std::pair<std::string, torch::Tensor>> state_dict;
  std::vector<AdamParamState> adam_state;  // one per parameter, in parameter order; empty = none
  int64_t scheduler_total_steps = 0;
  int64_t scheduler_last_epoch = -1;  // OneCycleLR's last_epoch; -1: not known (then global_step)
  torch::Tensor cpu_rng_state;                 // torch's default CPU generator
  // Saved mid-epoch: the epoch's batch order (training/loop/batch_order.h), int64;
  // undefined otherwise, and in checkpoints of other trainers.
  torch::Tensor epoch_order;
  // Saved mid-epoch in an epoch Lightning's restart began (a salt checkpoint resumed):
  // the batches per rank that restart skipped (BatchOrder::epoch_restart), else 0.
  int64_t epoch_restart = 0;
  // The loader iterators the run had made (training/loop/batch_order.h's bits); an
  // older salt-cpp checkpoint: both.
  int64_t loader_iterators = 3;
  std::vector<std::pair<std::string, double>> metrics;  // monitored values at save time
  // 16-mixed on CUDA: the loss scaler, as Lightning's MixedPrecision plugin state.
  std::optional<GradScalerState> amp_scaling;
  // Lightning callbacks' state_dict()s by state_key (the checkpoint's `callbacks`
  // entry besides salt's Checkpoint, which is written from the path).
  std::vector<std::pair<std::string, serialize::PyValue>> callback_states;
  AveragedWeights averaging;  // Lightning's WeightAveraging entries; empty: none
  // Lightning's save_weights_only: no optimizer, schedulers, loss scaler or callbacks.
  bool weights_only = false;
};

// Everything a module has to save: parameters then buffers, with full dotted names.
std::vector<std::pair<std::string, torch::Tensor>> module_state(const torch::nn::Module& module);

// Copies a saved state into `module`; unknown, missing or mis-shaped keys are an
// InputError naming the key and `source`.
void load_module_state(torch::nn::Module& module, const std::vector<std::pair<std::string, torch::Tensor>>& state,
                       const std::string& source);

// The optimizer's per-parameter state (any model.optimizer), and its restoration;
// state saved by another kind of optimizer is an InputError.
std::vector<AdamParamState> adam_state(Optimization& optimization);
void load_adam_state(Optimization& optimization, const std::vector<AdamParamState>& state, const std::string& source);

void save_checkpoint(const std::filesystem::path& path, const CheckpointState& state, const Optimization* optimization);
// InputError unless `path` is a checkpoint file, saying what it is instead: "<what>
// <p> does not exist", "… is a directory, not a checkpoint: give a checkpoint file
// (.ckpt), e.g. <p>/ckpts/<x>.ckpt", "… is not a regular file (a device, FIFO or
// socket), not a checkpoint", or "<p>: <the OS's reason>" when it cannot look (a
// name too long, no permission). `what` says where the path came from
// ("to_onnx: --ckpt_path"); empty: the path alone. load_checkpoint checks it first.
void require_checkpoint_file(const std::filesystem::path& path, const std::string& what = "");
CheckpointState load_checkpoint(const std::filesystem::path& path);

}  // namespace salt::training
