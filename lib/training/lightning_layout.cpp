#include "training/lightning_layout.h"

#include <yaml-cpp/yaml.h>

#include <ATen/ATen.h>

#include <limits>

#include "serialize/yaml_value.h"
#include "training/checkpoint.h"

namespace salt::training {
namespace {

using serialize::PyValue;

PyValue I(int64_t i) { return PyValue::integer(i); }
void put(const PyValue& dict, const std::string& key, PyValue value) { dict.set_item(PyValue::str(key), std::move(value)); }

// Lightning's progress trackers, fields in their dataclass order.
PyValue tracker(int64_t ready, int64_t completed, int64_t started = -1, int64_t processed = -1) {
  auto t = PyValue::dict();
  put(t, "ready", I(ready));
  put(t, "completed", I(completed));
  if (started >= 0) put(t, "started", I(started));
  if (processed >= 0) put(t, "processed", I(processed));
  return t;
}
PyValue all4(int64_t n) { return tracker(n, n, n, n); }
PyValue progress(PyValue total, PyValue current) {
  auto p = PyValue::dict();
  put(p, "total", std::move(total));
  put(p, "current", std::move(current));
  return p;
}
PyValue batch_progress(PyValue total, PyValue current, std::optional<bool> last) {
  auto p = progress(std::move(total), std::move(current));
  if (last) put(p, "is_last_batch", PyValue::boolean(*last));
  return p;
}
PyValue idle_loop(bool with_last_batch) {
  auto loop = PyValue::dict();
  put(loop, "state_dict", PyValue::dict());
  put(loop, "batch_progress",
      batch_progress(all4(0), all4(0), with_last_batch ? std::optional<bool>(false) : std::nullopt));
  return loop;
}

}  // namespace

PyValue lightning_loops(const CheckpointState& s) {
  const auto& shape = s.loop_shape;
  const bool epoch_end = s.batch_in_epoch < 0;
  const int64_t batches = epoch_end ? shape.train_batches : s.batch_in_epoch;  // this epoch's
  const int64_t steps = (batches + shape.accumulate - 1) / std::max<int64_t>(1, shape.accumulate);
  const int64_t g = s.global_step, total_batches = g * shape.accumulate;
  const int64_t e = s.epoch;

  auto fit = PyValue::dict();
  put(fit, "state_dict", PyValue::dict());
  auto stepped = PyValue::dict();
  put(stepped, "_batches_that_stepped", I(g));
  put(fit, "epoch_loop.state_dict", stepped);
  put(fit, "epoch_loop.batch_progress", batch_progress(all4(total_batches), all4(batches), epoch_end));
  put(fit, "epoch_loop.scheduler_progress", progress(tracker(g, g), tracker(steps, steps)));
  put(fit, "epoch_loop.automatic_optimization.state_dict", PyValue::dict());
  auto optimizer = PyValue::dict();
  put(optimizer, "step", progress(tracker(g, g), tracker(steps, steps)));
  put(optimizer, "zero_grad", progress(tracker(g, g, g), tracker(steps, steps, steps)));
  auto optim = PyValue::dict();
  put(optim, "optimizer", optimizer);
  put(fit, "epoch_loop.automatic_optimization.optim_progress", optim);
  put(fit, "epoch_loop.manual_optimization.state_dict", PyValue::dict());
  put(fit, "epoch_loop.manual_optimization.optim_step_progress", progress(tracker(0, 0), tracker(0, 0)));
  put(fit, "epoch_loop.val_loop.state_dict", PyValue::dict());
  const int64_t v = epoch_end ? shape.val_batches : 0;
  put(fit, "epoch_loop.val_loop.batch_progress", batch_progress(all4(v), all4(v), epoch_end));
  // Saved in on_train_epoch_end: processed, not yet completed. Mid-epoch: started only.
  const auto epochs = tracker(e + 1, e, e + 1, epoch_end ? e + 1 : e);
  put(fit, "epoch_progress", progress(epochs, epochs));

  auto loops = PyValue::dict();
  put(loops, "fit_loop", fit);
  put(loops, "validate_loop", idle_loop(true));
  put(loops, "test_loop", idle_loop(true));
  put(loops, "predict_loop", idle_loop(false));
  return loops;
}

PyValue lightning_callbacks(const std::filesystem::path& path) {
  // salt's Checkpoint is a ModelCheckpoint without a monitor, saving every epoch.
  auto state = PyValue::dict();
  put(state, "monitor", PyValue());
  put(state, "best_model_score", PyValue());
  put(state, "best_model_path", PyValue::str(path.string()));
  put(state, "current_score", PyValue());
  put(state, "dirpath", PyValue::str(path.parent_path().string()));
  put(state, "best_k_models", PyValue::dict());
  put(state, "kth_best_model_path", PyValue::str(""));
  put(state, "kth_value", PyValue::tensor(at::scalar_tensor(std::numeric_limits<float>::infinity())));
  put(state, "last_model_path", PyValue::str(""));
  auto callbacks = PyValue::dict();
  put(callbacks,
      "Checkpoint{'monitor': None, 'mode': 'min', 'every_n_train_steps': 0, 'every_n_epochs': 1, "
      "'train_time_interval': None}",
      state);
  return callbacks;
}

PyValue lightning_hparams(const std::string& config_yaml) {
  YAML::Node config;
  try {
    config = YAML::Load(config_yaml);
  } catch (const YAML::Exception&) {
    return PyValue();
  }
  if (!config.IsMap() || !config["model"] || !config["model"].IsMap()) return PyValue();
  auto hparams = serialize::yaml_to_py(config["model"]);
  // config.yaml drops link targets; ModelWrapper needs them.
  if (!hparams.find("name") && config["name"]) put(hparams, "name", serialize::yaml_to_py(config["name"]));
  if (!hparams.find("global_object") && config["data"] && config["data"]["global_object"])
    put(hparams, "global_object", serialize::yaml_to_py(config["data"]["global_object"]));
  put(hparams, "_instantiator", PyValue::str("lightning.pytorch.cli.instantiate_module"));
  return hparams;
}

std::string config_from_hparams(const PyValue& hparams) {
  if (!hparams.is_mapping() || !hparams.find("model") || !hparams.find("model")->is_mapping()) return "";
  auto model = PyValue::dict();
  for (const auto& [key, value] : hparams.entries())
    if (key.is_str() && key.as_str() != "_instantiator" && key.as_str() != "name" && key.as_str() != "global_object")
      model.set_item(key, value);
  auto data = PyValue::dict();
  put(data, "class_dict", PyValue());  // training's class weights only; base.yaml's path need not exist
  if (const auto* g = hparams.find("global_object")) put(data, "global_object", *g);
  if (const auto* norm = hparams.find("norm_config"); norm && norm->is_mapping())
    for (const char* key : {"variables", "norm_dict", "input_map"})
      if (const auto* v = norm->find(key); v && !v->is_none()) put(data, key, *v);
  auto config = PyValue::dict();
  if (const auto* name = hparams.find("name")) put(config, "name", *name);
  put(config, "model", model);
  put(config, "data", data);
  return serialize::py_to_yaml(config);
}

}  // namespace salt::training
