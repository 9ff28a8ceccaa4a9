#include "config/trainer_config.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <regex>

#include "config/yaml_util.h"
#include "core/errors.h"
#include "core/path_join.h"

namespace salt::config {

std::string profiler_report_name(const ProfilerConfig& p) { return "fit-" + p.filename.value_or("profiler") + ".txt"; }

namespace {

using T = TrainerConfig;

bool is_int_text(const std::string& s) {
  if (s.empty()) return false;
  std::size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  return i < s.size() && s.find_first_not_of("0123456789", i) == std::string::npos;
}

TypeP int_or_float() { return t_union({t_int(), t_float()}); }

BatchLimit parse_limit(const YAML::Node& node, const std::string& key) {
  BatchLimit limit;
  if (!given(node)) return limit;
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

void read_devices(T& c, const YAML::Node& devices) {
  c.device_ids.clear();
  c.num_devices = 1;
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
}

void read_precision(T& c, const YAML::Node& node) {
  c.precision_name = node.Scalar();
  const auto& p = c.precision_name;
  if (p == "32" || p == "32-true") c.precision = Precision::kFloat32;
  else if (p == "bf16" || p == "bf16-mixed") c.precision = Precision::kBFloat16Mixed;
  else if (p == "16" || p == "16-mixed") c.precision = Precision::kFloat16Mixed;
  else throw UsageError("'trainer.precision' must be 32, 16-mixed or bf16-mixed, got '" + p + "'");
}

void read_fast_dev_run(T& c, const YAML::Node& node) {
  const auto& fdr = node.Scalar();
  if (fdr == "true" || fdr == "True") c.fast_dev_run = 1;
  else if (fdr == "false" || fdr == "False") c.fast_dev_run = 0;
  else c.fast_dev_run = std::stoll(fdr);
  if (c.fast_dev_run < 0) throw UsageError("'trainer.fast_dev_run' must not be negative");
}

void read_deterministic(T& c, const YAML::Node& node) {
  c.deterministic = given(node) && node.Scalar() != "false";
  c.deterministic_warn_only = given(node) && node.Scalar() == "warn";
}

const Binding<ProfilerConfig>& profiler_binding() {
  static const auto b = Binding<ProfilerConfig>({})
                            .arg("dirpath", SALT_FIELD(dirpath), "Where the report goes (null: the run directory).",
                                 t_optional(t_path()))
                            .arg("filename", SALT_FIELD(filename), "Report file: fit-<filename>.txt (null: profiler).")
                            .arg("extended", SALT_FIELD(extended), "Add the calls and share columns.");
  return b;
}

const bool kSimpleProfiler = register_component(
    {"lightning.pytorch.profilers.SimpleProfiler", "profiler", profiler_binding().type(),
     "Time per stage and callback hook, Lightning's report.", Support::kFull, "",
     {"pytorch_lightning.profilers.SimpleProfiler", "lightning.pytorch.profilers.simple.SimpleProfiler"}});

// The report is <dirpath>/fit-<filename>.txt: dirpath is the user's folder, and
// filename must name a file in it (or below it), refused when the config is read.
void check_profiler_filename(const ProfilerConfig& p) {
  if (!p.filename) return;
  const std::string where = "'trainer.profiler' filename '" + shown_in_message(*p.filename, 120) + "'";
  const auto name = profiler_report_name(p);
  if (!stays_below(name))
    throw UsageError(where + " must stay inside the profiler's dirpath (not an absolute path, no '..')");
  for (const auto& part : std::filesystem::path(name))
    if (part.string().size() > 255) throw UsageError(where + " makes a file name longer than 255 bytes");
}

// trainer.profiler: "simple" or the SimpleProfiler component; Lightning's other
// profilers time Python code, which salt-cpp does not run.
void read_profiler(T& c, const YAML::Node& n) {
  c.profiler.reset();
  if (!given(n)) return;
  if (n.IsMap()) {
    c.profiler = n["init_args"] ? profiler_binding().read(n["init_args"]) : ProfilerConfig{};
    check_profiler_filename(*c.profiler);
    return;
  }
  if (n.Scalar() != "simple")
    throw UsageError("'trainer.profiler': '" + n.Scalar() + "' is not available in salt-cpp (it times Python code); "
                     "use simple");
  c.profiler = ProfilerConfig{};
}

// Lightning's val_check_interval: a fraction of the epoch's batches in (0, 1] or
// a count of training batches (>= 1).
void read_val_check_interval(T& c, const YAML::Node& node) {
  c.val_check_interval = parse_limit(node, "val_check_interval");
  if (c.val_check_interval.kind != BatchLimit::Kind::kAll && c.val_check_interval.value <= 0)
    throw UsageError("'trainer.val_check_interval' must be greater than 0");
}

// Lightning's check_val_every_n_epoch: null counts val_check_interval batches
// across epochs, so that needs a count.
void check_validation_schedule(T& c) {
  if (c.check_val_every_n_epoch == 0 && c.val_check_interval.kind != BatchLimit::Kind::kCount)
    throw UsageError("'trainer.val_check_interval' must be a number of batches when 'trainer.check_val_every_n_epoch' "
                     "is null (got " +
                     std::string(c.val_check_interval.kind == BatchLimit::Kind::kAll ? "null" : "a fraction") + ")");
}

// Lightning: max_epochs null means 1000, or no epoch limit when max_steps is set.
void resolve_max_epochs(T& c) {
  if (c.max_epochs_given) c.max_epochs = *c.max_epochs_given;
  else c.max_epochs = c.max_steps == -1 ? 1000 : -1;
}

Binding<T> make_trainer_binding() {
  const char* no_sanity = "salt-cpp runs no sanity-check validation before training";
  Binding<T> b{T{}};
  b.arg("accelerator", SALT_FIELD(accelerator),
        "Where to train: cpu, gpu (CUDA) or auto (gpu when the LibTorch build and the machine have one).",
        t_choice({"auto", "cpu", "gpu", "cuda"}))
      .unbound(field("strategy", t_str(), "auto", "Lightning's strategy name."))
      .ignored("salt-cpp always uses one process per device with c10d data parallelism")
      .custom(field("devices", t_union({t_int(), t_list(t_int()), t_str()}), "auto",
                    "Number of devices, a list of GPU indices, or 'auto'."),
              read_devices)
      .arg("num_nodes", SALT_FIELD(num_nodes), "Number of nodes for multi-node training.", at_least(t_int(), 1))
      .arg("precision", SALT_FIELD(precision_name), "32, 16-mixed, bf16-mixed (16-mixed becomes bf16-mixed on CPU).",
           t_union({t_int(), t_str()}), read_precision)
      .custom(field_null("logger", t_union({t_component("logger"), t_bool(), t_null()}),
                         "Experiment logger (TensorBoardLogger writes event files; Comet and W&B cannot be reached, "
                         "so they write TensorBoard files instead); metrics always go to <run>/metrics.csv."),
              [](T& c, const YAML::Node& n) {
                c.loggers.clear();
                if (n.IsMap()) c.loggers.push_back(Codec<ComponentNode>::decode(n));
              })
      .custom(field_null("callbacks", t_optional(t_list(t_component("callback"))), "Callbacks (checkpointing, progress, ...)."),
              [](T& c, const YAML::Node& n) {
                c.callbacks.clear();
                if (n.IsSequence())
                  for (const auto& cb : n) c.callbacks.push_back(Codec<ComponentNode>::decode(cb));
              })
      .custom(field("fast_dev_run", t_union({t_int(), t_bool()}), false,
                    "Smoke test: run N train and N val batches, write nothing (true = 1)."),
              read_fast_dev_run)
      .arg("max_epochs", SALT_FIELD(max_epochs_given), "Stop after this many epochs (null: 1000, unless max_steps is set).",
           t_optional(at_least(t_int(), -1)))
      .arg("min_epochs", SALT_FIELD(min_epochs),
           "Train at least this many epochs before a callback (EarlyStopping, Timer) may stop the run.",
           t_optional(at_least(t_int(), 0)))
      .arg("max_steps", SALT_FIELD(max_steps), "Stop after this many optimizer steps (-1: no limit).", at_least(t_int(), -1))
      .arg("min_steps", SALT_FIELD(min_steps),
           "Take at least this many optimizer steps before a callback may stop the run.",
           t_optional(at_least(t_int(), 0)))
      .custom(field_null("max_time", t_optional(t_union({t_str(), t_dict(t_float())})),
                         "Stop training after this long: 'DD:HH:MM:SS' or {hours: 2, minutes: 30} (adds a Timer)."),
              [](T& c, const YAML::Node& n) {
                c.max_time_seconds.reset();
                if (given(n)) c.max_time_seconds = duration_seconds(n, "trainer.max_time");
              });
  for (auto [key, member, help] :
       {std::tuple{"limit_train_batches", &T::limit_train, "Train batches per epoch: an int count or a fraction (null: all)."},
        std::tuple{"limit_val_batches", &T::limit_val,
                   "Validation batches per epoch: an int count or a fraction (null: all)."},
        std::tuple{"limit_test_batches", &T::limit_test, "Test batches: an int count or a fraction."}}) {
    const std::string k = key;
    b.custom(field_null(k, t_optional(int_or_float()), help),
             [k, member = member](T& c, const YAML::Node& n) { c.*member = parse_limit(n, k); });
  }
  b.unbound(field_null("limit_predict_batches", t_optional(int_or_float()), "Predict batches."))
      .ignored("prediction uses limit_test_batches")
      .custom(field("overfit_batches", int_or_float(), 0,
                    "Train on the first N batches (or that fraction) in file order, unshuffled, every epoch, and "
                    "validate on as many (0: off)."),
              [](T& c, const YAML::Node& n) {
                c.overfit_batches = parse_limit(n, "overfit_batches");
                if (c.overfit_batches.value == 0) c.overfit_batches = BatchLimit{};
              })
      .custom(field_null("val_check_interval", t_optional(int_or_float()),
                         "Validate within the epoch: a fraction of its batches (0.25: four times) or every N "
                         "training batches (null: once, at its end)."),
              read_val_check_interval)
      .custom(field("check_val_every_n_epoch", t_optional(at_least(t_int(), 1)), 1,
                    "Validate every N epochs (null: every val_check_interval batches across epochs)."),
              [](T& c, const YAML::Node& n) { c.check_val_every_n_epoch = given(n) ? n.as<int64_t>() : 0; })
      .custom(field_null("num_sanity_val_steps", t_optional(t_int()), "Sanity validation steps."),
              unless_null<T>(SALT_FIELD(num_sanity_val_steps)))
      .ignored(no_sanity)
      .arg("log_every_n_steps", SALT_FIELD(log_every_n_steps), "Log training metrics every N steps.",
           t_optional(at_least(t_int(), 1)), unless_null<T>(SALT_FIELD(log_every_n_steps)))
      .custom(field_null("enable_checkpointing", t_optional(t_bool()), "Write checkpoints (null: yes)."),
              unless_null<T>(SALT_FIELD(enable_checkpointing)))
      .custom(field_null("enable_progress_bar", t_optional(t_bool()), "Show a progress bar (null: yes)."),
              unless_null<T>(SALT_FIELD(enable_progress_bar)))
      .custom(field_null("enable_model_summary", t_optional(t_bool()), "Print the model summary (null: yes)."),
              unless_null<T>(SALT_FIELD(enable_model_summary)))
      .arg("accumulate_grad_batches", SALT_FIELD(accumulate_grad_batches),
           "Accumulate gradients over N batches before each optimizer step.", at_least(t_int(), 1))
      .arg("gradient_clip_val", SALT_FIELD(gradient_clip_val), "Clip gradients at this value (null: no clipping).",
           t_optional(at_least(int_or_float(), 0)))
      .custom(field_null("gradient_clip_algorithm", t_optional(t_choice({"norm", "value"})),
                         "Clip by 'norm' (default) or 'value'."),
              unless_null<T>(SALT_FIELD(gradient_clip_algorithm)))
      .custom(field_null("deterministic", t_optional(t_union({t_bool(), t_str()})),
                         "Use deterministic algorithms (bitwise-reproducible runs, slower on GPU)."),
              read_deterministic)
      .unbound(field_null("benchmark", t_optional(t_bool()), "cuDNN benchmark mode."))
      .ignored("salt-cpp uses no cuDNN convolutions")
      .unbound(field("inference_mode", t_bool(), true, "Use inference mode for evaluation."))
      .ignored("evaluation always runs without gradients")
      .unbound(field("use_distributed_sampler", t_bool(), true, "Shard batches across processes."))
      .ignored("salt-cpp always shards its weakly-shuffled batches across processes")
      // Lightning 2.6.2 added it, and salt's config.yaml then carries it.
      .unbound(field("suggest_integrations", t_bool(), true, "Suggest optional Lightning integrations."))
      .ignored("salt-cpp suggests none")
      .custom(field_null("profiler", t_optional(t_union({t_str(), t_component("profiler")})),
                         "simple (or lightning.pytorch.profilers.SimpleProfiler): time per stage and callback hook, "
                         "printed and written to <run>/fit-profiler.txt."),
              read_profiler)
      .unbound(field("detect_anomaly", t_bool(), false, "Autograd anomaly detection.")).ignored("not available in salt-cpp")
      .unbound(field("barebones", t_bool(), false, "Lightning barebones mode.")).ignored("salt-cpp has no such overhead to remove")
      .unbound(field_null("plugins", t_any(), "Lightning plugins.")).unsupported("not available in salt-cpp")
      .unbound(field("sync_batchnorm", t_bool(), false, "Synchronise batch norm.")).ignored("salt's models have no batch norm")
      .unbound(field("reload_dataloaders_every_n_epochs", t_int(), 0, "Rebuild loaders every N epochs."))
      .ignored("loaders are reused across epochs")
      .custom(field_null("default_root_dir", t_optional(t_path()), "Where run directories are created (null: logs)."),
              unless_null<T>(SALT_FIELD(default_root_dir)))
      .unbound(field_null("model_registry", t_optional(t_str()), "Lightning model registry.")).ignored("not available in salt-cpp")
      // Lightning >= 2.5 (salt's config.yaml from Lightning 2.6 carries it)
      .unbound(field("enable_autolog_hparams", t_bool(), true, "Log the hyper-parameters to the logger at the start."))
      .ignored("salt-cpp's loggers write the run's config.yaml instead")
      .finally(resolve_max_epochs)
      .finally(check_validation_schedule);
  return b;
}

}  // namespace

double duration_seconds(const YAML::Node& node, const std::string& where) {
  if (node.IsMap()) {  // Python's timedelta(**dict)
    static const std::map<std::string, double> unit{{"weeks", 604800}, {"days", 86400}, {"hours", 3600}, {"minutes", 60},
                                                    {"seconds", 1},    {"milliseconds", 1e-3}, {"microseconds", 1e-6}};
    double total = 0;
    for (const auto& kv : node) {
      const auto key = kv.first.Scalar();
      const auto it = unit.find(key);
      if (it == unit.end())
        throw UsageError("'" + where + "." + key + "': unknown key (a duration takes weeks, days, hours, minutes, "
                         "seconds, milliseconds, microseconds)");
      total += kv.second.as<double>() * it->second;
    }
    if (!(total >= 0)) throw UsageError("'" + where + "' must not be negative");
    return total;
  }
  const auto text = node.Scalar();
  static const std::regex ddhhmmss(R"(\s*(\d+):(\d\d):(\d\d):(\d\d)\s*)");  // Lightning's Timer format
  std::smatch m;
  if (!std::regex_match(text, m, ddhhmmss))
    throw UsageError("'" + where + "' is not a valid duration: '" + text + "' (expected DD:HH:MM:SS)");
  return ((std::stod(m[1]) * 24 + std::stod(m[2])) * 60 + std::stod(m[3])) * 60 + std::stod(m[4]);
}

int64_t BatchLimit::apply(int64_t available) const {
  switch (kind) {
    case Kind::kAll: return available;
    case Kind::kCount: return std::min<int64_t>(available, static_cast<int64_t>(value));
    case Kind::kFraction: return static_cast<int64_t>(std::floor(value * static_cast<double>(available)));
  }
  return available;
}

const Binding<TrainerConfig>& trainer_binding() {
  static const Binding<TrainerConfig> b = make_trainer_binding();
  return b;
}

TrainerConfig trainer_config_from_yaml(const YAML::Node& config) { return trainer_binding().read(get(config, "trainer")); }

}  // namespace salt::config
