#include "training/checkpoints/lightning_layout.h"

#include <yaml-cpp/yaml.h>

#include <ATen/ATen.h>

#include <limits>

#include "config/salt_readable.h"
#include "serialize/yaml_value.h"
#include "training/checkpoints/checkpoint.h"

namespace salt::training {
namespace {

using serialize::PyValue;

using serialize::py::I;
// Lightning's progress trackers, fields in their dataclass order.
PyValue tracker(int64_t ready, int64_t completed, int64_t started = -1, int64_t processed = -1) {
  auto t = PyValue::dict();
  t.set_item("ready", I(ready));
  t.set_item("completed", I(completed));
  if (started >= 0) t.set_item("started", I(started));
  if (processed >= 0) t.set_item("processed", I(processed));
  return t;
}
PyValue all4(int64_t n) { return tracker(n, n, n, n); }
PyValue progress(PyValue total, PyValue current) {
  auto p = PyValue::dict();
  p.set_item("total", std::move(total));
  p.set_item("current", std::move(current));
  return p;
}
PyValue batch_progress(PyValue total, PyValue current, std::optional<bool> last) {
  auto p = progress(std::move(total), std::move(current));
  if (last) p.set_item("is_last_batch", PyValue::boolean(*last));
  return p;
}
PyValue idle_loop(bool with_last_batch) {
  auto loop = PyValue::dict();
  loop.set_item("state_dict", PyValue::dict());
  loop.set_item("batch_progress",
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
  fit.set_item("state_dict", PyValue::dict());
  auto stepped = PyValue::dict();
  stepped.set_item("_batches_that_stepped", I(g));
  fit.set_item("epoch_loop.state_dict", stepped);
  fit.set_item("epoch_loop.batch_progress", batch_progress(all4(total_batches), all4(batches), epoch_end));
  fit.set_item("epoch_loop.scheduler_progress", progress(tracker(g, g), tracker(steps, steps)));
  fit.set_item("epoch_loop.automatic_optimization.state_dict", PyValue::dict());
  auto optimizer = PyValue::dict();
  optimizer.set_item("step", progress(tracker(g, g), tracker(steps, steps)));
  optimizer.set_item("zero_grad", progress(tracker(g, g, g), tracker(steps, steps, steps)));
  auto optim = PyValue::dict();
  optim.set_item("optimizer", optimizer);
  fit.set_item("epoch_loop.automatic_optimization.optim_progress", optim);
  fit.set_item("epoch_loop.manual_optimization.state_dict", PyValue::dict());
  fit.set_item("epoch_loop.manual_optimization.optim_step_progress", progress(tracker(0, 0), tracker(0, 0)));
  fit.set_item("epoch_loop.val_loop.state_dict", PyValue::dict());
  const int64_t v = epoch_end ? shape.val_batches : 0;
  fit.set_item("epoch_loop.val_loop.batch_progress", batch_progress(all4(v), all4(v), epoch_end));
  // Saved in on_train_epoch_end: processed, not yet completed. Mid-epoch: started only.
  const auto epochs = tracker(e + 1, e, e + 1, epoch_end ? e + 1 : e);
  fit.set_item("epoch_progress", progress(epochs, epochs));

  auto loops = PyValue::dict();
  loops.set_item("fit_loop", fit);
  loops.set_item("validate_loop", idle_loop(true));
  loops.set_item("test_loop", idle_loop(true));
  loops.set_item("predict_loop", idle_loop(false));
  return loops;
}

PyValue lightning_callbacks(const std::filesystem::path& path) {
  // salt's Checkpoint is a ModelCheckpoint without a monitor, saving every epoch.
  auto state = PyValue::dict();
  state.set_item("monitor", PyValue());
  state.set_item("best_model_score", PyValue());
  state.set_item("best_model_path", PyValue::str(path.string()));
  state.set_item("current_score", PyValue());
  state.set_item("dirpath", PyValue::str(path.parent_path().string()));
  state.set_item("best_k_models", PyValue::dict());
  state.set_item("kth_best_model_path", PyValue::str(""));
  state.set_item("kth_value", PyValue::tensor(at::scalar_tensor(std::numeric_limits<float>::infinity())));
  state.set_item("last_model_path", PyValue::str(""));
  auto callbacks = PyValue::dict();
  callbacks.set_item(
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
  const YAML::Node model = config::model_hparams(config);
  if (!model.IsDefined()) return PyValue();
  auto hparams = serialize::yaml_to_py(model);
  hparams.set_item("_instantiator", PyValue::str("lightning.pytorch.cli.instantiate_module"));
  return hparams;
}

std::string config_from_hparams(const PyValue& hparams) {
  if (!hparams.is_mapping() || !hparams.find("model") || !hparams.find("model")->is_mapping()) return "";
  auto model = PyValue::dict();
  for (const auto& [key, value] : hparams.entries())
    if (key.is_str() && key.as_str() != "_instantiator" && key.as_str() != "name" && key.as_str() != "global_object")
      model.set_item(key, value);
  auto data = PyValue::dict();
  data.set_item("class_dict", PyValue());  // training's class weights only; base.yaml's path need not exist
  if (const auto* g = hparams.find("global_object")) data.set_item("global_object", *g);
  if (const auto* norm = hparams.find("norm_config"); norm && norm->is_mapping())
    for (const char* key : {"variables", "norm_dict", "input_map"})
      if (const auto* v = norm->find(key); v && !v->is_none()) data.set_item(key, *v);
  auto config = PyValue::dict();
  if (const auto* name = hparams.find("name")) config.set_item("name", *name);
  config.set_item("model", model);
  config.set_item("data", data);
  return serialize::py_to_yaml(config);
}

}  // namespace salt::training
