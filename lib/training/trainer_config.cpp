#include "training/trainer_config.h"

#include <cmath>

#include "config/yaml_util.h"
#include "core/errors.h"

namespace salt::training {
namespace {

bool is_int_text(const std::string& s) {
  if (s.empty()) return false;
  std::size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  return i < s.size() && s.find_first_not_of("0123456789", i) == std::string::npos;
}

BatchLimit parse_limit(const YAML::Node& node, const std::string& key) {
  BatchLimit limit;
  if (!node || node.IsNull()) return limit;
  const auto& text = node.Scalar();
  if (is_int_text(text)) {
    limit.kind = BatchLimit::Kind::kCount;
    limit.value = static_cast<double>(std::stoll(text));
    if (limit.value < 0) throw UsageError("'trainer." + key + "' must not be negative");
  } else {
    limit.kind = BatchLimit::Kind::kFraction;
    limit.value = node.as<double>();
    if (!(limit.value >= 0 && limit.value <= 1))
      throw UsageError("'trainer." + key + "' as a fraction must be in [0, 1], got " + text);
  }
  return limit;
}

bool optional_bool(const YAML::Node& node, bool fallback) { return node && !node.IsNull() ? node.as<bool>() : fallback; }

}  // namespace

int64_t BatchLimit::apply(int64_t available) const {
  switch (kind) {
    case Kind::kAll: return available;
    case Kind::kCount: return std::min<int64_t>(available, static_cast<int64_t>(value));
    case Kind::kFraction: return static_cast<int64_t>(std::floor(value * static_cast<double>(available)));
  }
  return available;
}

TrainerConfig trainer_config_from_yaml(const YAML::Node& config) {
  const YAML::Node t = config["trainer"];
  TrainerConfig c;
  c.accelerator = t["accelerator"].as<std::string>();
  const auto devices = t["devices"];
  if (devices.IsSequence()) {
    for (const auto& d : devices) c.device_ids.push_back(d.as<int>());
    c.num_devices = static_cast<int>(c.device_ids.size());
    if (c.num_devices == 0) throw UsageError("'trainer.devices' is an empty list");
  } else if (is_int_text(devices.Scalar())) {
    c.num_devices = devices.as<int>();
    if (c.num_devices < 1) throw UsageError("'trainer.devices' must be at least 1");
  } else if (devices.Scalar() != "auto") {
    throw UsageError("'trainer.devices' must be a number, a list of GPU ids or 'auto', got '" + devices.Scalar() + "'");
  }
  c.num_nodes = t["num_nodes"].as<int>();

  c.precision_name = t["precision"].Scalar();
  const auto& p = c.precision_name;
  if (p == "32" || p == "32-true") c.precision = Precision::kFloat32;
  else if (p == "bf16" || p == "bf16-mixed") c.precision = Precision::kBFloat16Mixed;
  else if (p == "16" || p == "16-mixed") c.precision = Precision::kFloat16Mixed;
  else throw UsageError("'trainer.precision' must be 32, 16-mixed or bf16-mixed, got '" + p + "'");

  const auto fdr = t["fast_dev_run"].Scalar();
  if (fdr == "true") c.fast_dev_run = 1;
  else if (fdr == "false") c.fast_dev_run = 0;
  else c.fast_dev_run = std::stoll(fdr);
  if (c.fast_dev_run < 0) throw UsageError("'trainer.fast_dev_run' must not be negative");

  c.max_steps = t["max_steps"].as<int64_t>();
  if (t["max_epochs"].IsNull()) c.max_epochs = c.max_steps == -1 ? 1000 : -1;
  else c.max_epochs = t["max_epochs"].as<int64_t>();
  c.limit_train = parse_limit(t["limit_train_batches"], "limit_train_batches");
  c.limit_val = parse_limit(t["limit_val_batches"], "limit_val_batches");
  c.limit_test = parse_limit(t["limit_test_batches"], "limit_test_batches");
  if (!t["check_val_every_n_epoch"].IsNull()) c.check_val_every_n_epoch = t["check_val_every_n_epoch"].as<int64_t>();
  if (!t["log_every_n_steps"].IsNull()) c.log_every_n_steps = t["log_every_n_steps"].as<int64_t>();
  c.accumulate_grad_batches = t["accumulate_grad_batches"].as<int64_t>();
  if (c.accumulate_grad_batches < 1) throw UsageError("'trainer.accumulate_grad_batches' must be at least 1");
  if (!t["gradient_clip_val"].IsNull()) c.gradient_clip_val = t["gradient_clip_val"].as<double>();
  if (!t["gradient_clip_algorithm"].IsNull()) c.gradient_clip_algorithm = t["gradient_clip_algorithm"].as<std::string>();
  const auto det = t["deterministic"];
  c.deterministic = det && !det.IsNull() && det.Scalar() != "false";
  c.enable_checkpointing = optional_bool(t["enable_checkpointing"], true);
  c.enable_progress_bar = optional_bool(t["enable_progress_bar"], true);
  c.enable_model_summary = optional_bool(t["enable_model_summary"], true);
  if (!t["default_root_dir"].IsNull()) c.default_root_dir = t["default_root_dir"].as<std::string>();

  if (t["callbacks"].IsSequence())
    for (const auto& cb : t["callbacks"]) c.callbacks.push_back(cb);
  return c;
}

}  // namespace salt::training
