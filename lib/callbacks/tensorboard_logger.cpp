// trainer.logger: Lightning's TensorBoardLogger writes TensorBoard event files
// (lib/tensorboard): every logged metric (train steps, validation) as a
// scalar at the global step, the learning rate at every optimizer step, the run's
// config as text. Comet and W&B, named by salt's base config, cannot be reached
// from salt-cpp: they say so in one line and write the same files into
// <run>/tensorboard instead. Rank 0 only, nothing under fast_dev_run.
#include <spdlog/spdlog.h>

#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "training/callback_registry.h"
#include "core/path_join.h"
#include "tensorboard/event_writer.h"

namespace salt::callbacks {
namespace {
namespace fs = std::filesystem;

struct TensorBoardOptions {
  std::string save_dir;
  std::string name = "lightning_logs";
  YAML::Node version;  // int, string or null (the next free version_N)
  std::optional<std::string> sub_dir;
  std::string prefix;
  bool log_graph = false, default_hp_metric = true;
};

const config::Binding<TensorBoardOptions>& tensorboard_logger_binding() {
  using namespace config;
  static const auto b =
      Binding<TensorBoardOptions>({})
          .required("save_dir", SALT_FIELD(save_dir), "Directory under which <name>/<version> is made.", t_path())
          .arg("name", SALT_FIELD(name), "Experiment name: the folder below save_dir.")
          .custom(field_null("version", t_union({t_int(), t_str(), t_null()}),
                             "version_<int>, a folder name, or null for the next free version_N."),
                  [](TensorBoardOptions& o, const YAML::Node& n) { o.version = n; })
          .arg("sub_dir", SALT_FIELD(sub_dir), "A further folder below the version.", t_optional(t_str()))
          .arg("prefix", SALT_FIELD(prefix), "Prefix of every tag.")
          .arg("log_graph", SALT_FIELD(log_graph), "Log the model graph (not written by salt-cpp).")
          .arg("default_hp_metric", SALT_FIELD(default_hp_metric), "Lightning's hp_metric placeholder (not written).");
  return b;
}

// Lightning's layout: save_dir/name/version_N[/sub_dir], N the first unused. The
// names are the config's: each must stay below save_dir (join_below).
fs::path lightning_log_dir(const TensorBoardOptions& o) {
  const fs::path root = join_below(o.save_dir, o.name, "TensorBoardLogger 'name'");
  fs::path dir;
  if (o.version && o.version.IsScalar() && !o.version.IsNull()) {
    int v = 0;
    dir = YAML::convert<int>::decode(o.version, v) ? root / ("version_" + std::to_string(v))
                                                   : join_below(root, o.version.Scalar(), "TensorBoardLogger 'version'");
  } else {
    int n = 0;
    std::error_code ec;
    while (fs::exists(root / ("version_" + std::to_string(n)), ec)) ++n;
    dir = root / ("version_" + std::to_string(n));
  }
  return o.sub_dir ? join_below(dir, *o.sub_dir, "TensorBoardLogger 'sub_dir'") : dir;
}

// The names refused when the config is read, before a run directory exists.
TensorBoardOptions checked(TensorBoardOptions o) {
  const fs::path below("save_dir");
  join_below(below, o.name, "TensorBoardLogger 'name'");
  int v = 0;
  if (o.version && o.version.IsScalar() && !o.version.IsNull() && !YAML::convert<int>::decode(o.version, v))
    join_below(below, o.version.Scalar(), "TensorBoardLogger 'version'");
  if (o.sub_dir) join_below(below, *o.sub_dir, "TensorBoardLogger 'sub_dir'");
  return o;
}

class TensorBoardLogger : public Callback {
 public:
  // `dir` empty: <run>/tensorboard, decided at fit start; `instead_of`: the logger it stands in for.
  TensorBoardLogger(std::optional<TensorBoardOptions> options, std::string instead_of)
      : options_(std::move(options)), instead_of_(std::move(instead_of)) {}

  void on_fit_start(FitState& s) override {
    if (s.dev_run || !s.process.main_rank) return;
    const fs::path dir = options_ ? lightning_log_dir(*options_) : s.run_dir / "tensorboard";
    writer_ = std::make_unique<tensorboard::EventWriter>(dir);
    spdlog::info("TensorBoard event files{}: {}", instead_of_.empty() ? "" : " (for " + instead_of_ + ")", dir.string());
    std::ifstream config(s.run_dir / "config.yaml");
    std::stringstream text;
    text << config.rdbuf();
    // Markdown: indented by four spaces, the YAML shows as a code block.
    std::string indented = "    ";
    for (char c : text.str()) indented += c == '\n' ? std::string("\n    ") : std::string(1, c);
    writer_->text(tag("config"), indented, s.logged_step());
    writer_->flush();
  }

  void on_batch_end(FitState& s, const std::string& stage, int64_t, const torch::Tensor&, int64_t) override {
    if (writer_ && stage == "train") writer_->scalar(tag(lr_tag(s)), s.last_step.lr, s.logged_step());
  }

  void on_metrics(FitState& s, const Metrics& m) override {
    if (!writer_) return;
    for (const auto& [name, value] : m)
      if (name != lr_tag(s) && name != "epoch" && name != "step") writer_->scalar(tag(name), value, s.logged_step());
    writer_->scalar(tag("epoch"), static_cast<double>(s.epoch), s.logged_step());  // as Lightning logs it
  }

  void on_histogram(FitState& s, const std::string& name, const std::vector<double>& values) override {
    if (writer_) writer_->histogram(tag(name), values, s.logged_step());
  }
  void on_image(FitState& s, const std::string& name, const std::string& png) override {
    if (writer_) writer_->image(tag(name), png, s.logged_step());
  }
  void on_text(FitState& s, const std::string& name, const std::string& markdown) override {
    if (writer_) writer_->text(tag(name), markdown, s.logged_step());
  }
  void on_validation_end(FitState&) override {
    if (writer_) writer_->flush();
  }
  void on_fit_end(FitState&) override {
    if (writer_) writer_->flush();
  }

 private:
  static std::string lr_tag(const FitState& s) { return "lr-" + s.last_step.optimizer_name; }
  std::string tag(const std::string& name) const {
    return options_ && !options_->prefix.empty() ? options_->prefix + "-" + name : name;
  }
  std::optional<TensorBoardOptions> options_;
  std::string instead_of_;
  std::unique_ptr<tensorboard::EventWriter> writer_;
};

// Comet and W&B need their servers, which a batch node cannot reach; validation
// prints this after the logger's class path, with the config's file:line.
constexpr const char* kInstead =
    "cannot be reached from salt-cpp; TensorBoard event files are written to <run>/tensorboard instead";

const bool kTensorboardLoggerRegistered =
    register_callback({{"lightning.pytorch.loggers.TensorBoardLogger", "logger", tensorboard_logger_binding().type(),
                        "TensorBoard event files under save_dir/name/version_N.", config::Support::kFull, "",
                        {"pytorch_lightning.loggers.TensorBoardLogger", "lightning.pytorch.loggers.tensorboard.TensorBoardLogger"}},
                       [](const YAML::Node& args) {
                         return std::make_unique<TensorBoardLogger>(checked(tensorboard_logger_binding().read(args)), "");
                       }}) &&
    register_callback({{"lightning.pytorch.loggers.CometLogger", "logger", config::t_dict(config::t_any()),
                        "Comet.ml logger.", config::Support::kSubstituted, kInstead,
                        {"lightning.pytorch.loggers.comet.CometLogger", "pytorch_lightning.loggers.CometLogger"}},
                       [](const YAML::Node&) { return std::make_unique<TensorBoardLogger>(std::nullopt, "CometLogger"); }}) &&
    register_callback({{"lightning.pytorch.loggers.WandbLogger", "logger", config::t_dict(config::t_any()),
                        "Weights & Biases logger.", config::Support::kSubstituted, kInstead,
                        {"lightning.pytorch.loggers.wandb.WandbLogger", "pytorch_lightning.loggers.WandbLogger"}},
                       [](const YAML::Node&) { return std::make_unique<TensorBoardLogger>(std::nullopt, "WandbLogger"); }});

}  // namespace
}  // namespace salt::callbacks
