// lightning.pytorch.callbacks.ModelCheckpoint, beside salt's own Checkpoint:
// full checkpoints (or weights only) into dirpath (default <run>/checkpoints)
// under Lightning's filename templates ("{epoch}-{step}", "{epoch:03d}-{val/loss:.4f}"),
// every N epochs or every N optimizer steps, keeping the save_top_k best by
// `monitor` (or the latest without one), plus last.ckpt with save_last. Its state
// (best_k_models, best_model_path, ...) is saved in every checkpoint under
// Lightning's state key, so a resumed run keeps ranking the same files.
#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "callbacks/checkpoint_writer.h"
#include "callbacks/monitor.h"
#include "training/callback_registry.h"
#include "core/errors.h"
#include "core/path_join.h"

namespace salt::callbacks {
namespace {
namespace fs = std::filesystem;

struct ModelCheckpointOptions {
  std::optional<std::string> dirpath, filename, monitor;
  bool verbose = false;
  YAML::Node save_last;  // null, true/false or "link"
  int64_t save_top_k = 1;
  bool save_on_exception = false;
  bool save_weights_only = false;
  std::string mode = "min";
  bool auto_insert_metric_name = true;
  std::optional<int64_t> every_n_train_steps, every_n_epochs;
  YAML::Node train_time_interval;
  std::optional<bool> save_on_train_epoch_end;
  bool enable_version_counter = true;
};

const config::Binding<ModelCheckpointOptions>& model_checkpoint_binding() {
  using namespace config;
  static const auto b =
      Binding<ModelCheckpointOptions>({})
          .arg("dirpath", SALT_FIELD(dirpath), "Where checkpoints go (null: <run>/checkpoints).", t_optional(t_path()))
          .arg("filename", SALT_FIELD(filename),
               "File name template, e.g. '{epoch:03d}-{val/loss:.4f}' (null: '{epoch}-{step}'); '.ckpt' is added.")
          .arg("monitor", SALT_FIELD(monitor), "Metric that ranks checkpoints, e.g. val/loss (null: the latest wins).")
          .arg("verbose", SALT_FIELD(verbose), "Log each save.")
          .arg("save_last", SALT_FIELD(save_last), "Also keep last.ckpt, the latest state ('link': a symlink to it).",
               t_optional(t_union({t_bool(), t_choice({"link"})})))
          .arg("save_top_k", SALT_FIELD(save_top_k), "Keep the k best (-1: all, 0: none).", at_least(t_int(), -1))
          .arg("save_on_exception", SALT_FIELD(save_on_exception),
               "Save the last step's state when training fails (an error, a non-finite loss, SIGINT/SIGTERM).")
          .arg("save_weights_only", SALT_FIELD(save_weights_only),
               "Weights only: no optimizer, scheduler or callback state (cannot resume training).")
          .arg("mode", SALT_FIELD(mode), "min: lower monitor is better; max: higher.", t_choice({"min", "max"}))
          .arg("auto_insert_metric_name", SALT_FIELD(auto_insert_metric_name),
               "Write '{epoch}' as 'epoch=3' (false: '3').")
          .arg("every_n_train_steps", SALT_FIELD(every_n_train_steps), "Save every N optimizer steps.",
               t_optional(at_least(t_int(), 0)))
          .arg("train_time_interval", SALT_FIELD(train_time_interval), "Save every so much training time.", t_any())
          .unsupported("use every_n_train_steps")
          .arg("every_n_epochs", SALT_FIELD(every_n_epochs), "Save every N epochs (null: 1 unless steps are set).",
               t_optional(at_least(t_int(), 0)))
          .arg("save_on_train_epoch_end", SALT_FIELD(save_on_train_epoch_end),
               "Save at the train epoch's end instead of after validation (null: Lightning's choice).")
          .arg("enable_version_counter", SALT_FIELD(enable_version_counter),
               "Add -v1, -v2 to a name that exists instead of overwriting it.");
  return b;
}

using CheckpointValues = std::map<std::string, std::pair<double, bool>>;  // name -> (value, is an int)

// str.format's "{0[name]:spec}" fields, after Lightning's template rewrite.
std::string format_fields(const std::string& text, const CheckpointValues& values, const std::string& where) {
  std::string out;
  auto unreadable = [&](std::size_t at) {
    return UsageError(where + ": cannot read the field at '" + shown_in_message(text.substr(at), 60) +
                      "' in the filename template");
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') throw UsageError(where + ": single '}' in the filename template");
    if (c != '{') {
      out += c;
      continue;
    }
    const auto close = text.find('}', i);
    if (text.compare(i, 3, "{0[") != 0 || close == std::string::npos) throw unreadable(i);
    const auto bracket = text.find(']', i + 3);
    if (bracket == std::string::npos || bracket > close) throw unreadable(i);
    const auto name = text.substr(i + 3, bracket - i - 3);
    std::string spec;
    if (text[bracket + 1] == ':') spec = text.substr(bracket + 2, close - bracket - 2);
    else if (bracket + 1 != close) throw unreadable(i);
    const auto value = values.find(name);
    if (value == values.end()) throw unreadable(i);
    out += python_format(value->second.first, value->second.second, spec,
                         where + " ('" + shown_in_message(name, 60) + "')");
    i = close;
  }
  return out;
}

// Lightning's template groups, as its regex "(\{.*?)[:\}]" finds them: from each
// '{' to the first ':' or '}' after it (not across a newline, as '.' does not
// match one). A scan, not std::regex: that recurses per character and would
// overflow the stack on a long template.
std::vector<std::string> template_groups(const std::string& name) {
  std::vector<std::string> groups;
  for (std::size_t at = name.find('{'); at != std::string::npos;) {
    const auto end = name.find_first_of(":}\n", at + 1);
    if (end != std::string::npos && name[end] != '\n') {
      groups.push_back(name.substr(at, end - at));
      at = name.find('{', end + 1);
    } else {
      at = name.find('{', at + 1);
    }
  }
  return groups;
}

// A file name's parts must each fit a file system's 255 bytes.
constexpr std::size_t kMaxNamePart = 255;

class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(ModelCheckpointOptions o) : o_(std::move(o)), better_(o_.mode) {
    kth_value_ = better_.worst();
    if (!o_.every_n_train_steps && !o_.every_n_epochs) {
      every_n_epochs_ = 1;  // Lightning: after each validation unless a step trigger is given
    } else {
      every_n_epochs_ = o_.every_n_epochs.value_or(0);
      every_n_train_steps_ = o_.every_n_train_steps.value_or(0);
    }
    if (o_.save_last.IsDefined() && !o_.save_last.IsNull())
      save_last_ = o_.save_last.Scalar() == "link" ? 2 : o_.save_last.as<bool>() ? 1 : 0;
    if (every_n_epochs_ >= 1 && every_n_train_steps_ >= 1)
      throw UsageError("ModelCheckpoint: every_n_train_steps=" + std::to_string(every_n_train_steps_) +
                       " and every_n_epochs=" + std::to_string(every_n_epochs_) + " are mutually exclusive");
    if (!o_.monitor && o_.save_top_k != -1 && o_.save_top_k != 0 && o_.save_top_k != 1)
      throw UsageError("ModelCheckpoint(save_top_k=" + std::to_string(o_.save_top_k) +
                       ", monitor=None) is not valid: no quantity to rank the top k by; set a monitor");
    check_filename();
  }

  bool saves_checkpoints() const override { return true; }

  std::string state_key() const override {
    return "ModelCheckpoint" + python_kwargs_repr({{"monitor", o_.monitor ? python_str_repr(*o_.monitor) : "None"},
                                                   {"mode", python_str_repr(o_.mode)},
                                                   {"every_n_train_steps", std::to_string(every_n_train_steps_)},
                                                   {"every_n_epochs", std::to_string(every_n_epochs_)},
                                                   {"train_time_interval", "None"}});
  }

  serialize::PyValue state_dict() const override {
    using serialize::PyValue;
    auto score = [](std::optional<float> v) { return v ? PyValue::tensor(at::scalar_tensor(*v, at::kFloat)) : PyValue(); };
    auto d = PyValue::dict();
    auto put = [&](const char* key, PyValue value) { d.set_item(PyValue::str(key), std::move(value)); };
    put("monitor", o_.monitor ? PyValue::str(*o_.monitor) : PyValue());
    put("best_model_score", score(best_model_score_));
    put("best_model_path", PyValue::str(best_model_path_));
    put("current_score", score(current_score_));
    put("dirpath", PyValue::str(dirpath_.string()));
    auto best_k = PyValue::dict();
    for (const auto& [path, value] : best_k_models_) best_k.set_item(PyValue::str(path), score(value));
    put("best_k_models", best_k);
    put("kth_best_model_path", PyValue::str(kth_best_model_path_));
    put("kth_value", score(kth_value_));
    put("last_model_path", PyValue::str(last_model_path_));
    return d;
  }

  void load_state_dict(FitState& s, const serialize::PyValue& d) override {
    resolve_dir(s);
    const auto* saved_dir = d.find("dirpath");
    const bool same_dir = !saved_dir || (saved_dir->is_str() && fs::path(saved_dir->as_str()) == dirpath_);
    if (same_dir) {
      const auto& best = required_entry(d, "best_model_score");
      best_model_score_ = best.is_none() ? std::nullopt : std::optional<float>(score_of(best));
      if (const auto* v = d.find("kth_best_model_path"); v && v->is_str()) kth_best_model_path_ = v->as_str();
      if (const auto* v = d.find("kth_value"); v && !v->is_none()) kth_value_ = static_cast<float>(score_of(*v));
      if (const auto* v = d.find("best_k_models"); v && v->is_mapping()) {
        best_k_models_.clear();
        for (const auto& [path, value] : v->entries()) best_k_models_.emplace_back(path.as_str(), score_of(value));
      }
      if (const auto* v = d.find("last_model_path"); v && v->is_str()) last_model_path_ = v->as_str();
    } else {
      spdlog::warn("ModelCheckpoint: the dirpath has changed from {} to {}, so only best_model_path is restored",
                   saved_dir->is_str() ? saved_dir->as_str() : "?", dirpath_.string());
    }
    best_model_path_ = required_entry(d, "best_model_path").as_str();
  }

  void on_setup(FitState& s) override {
    if (!s.setup->run.trainer.enable_checkpointing)
      throw UsageError("trainer.enable_checkpointing is false but trainer.callbacks has a ModelCheckpoint; "
                       "remove one of them");
    const auto& t = s.setup->run.trainer;
    on_epoch_end_ = o_.save_on_train_epoch_end.value_or(t.check_val_every_n_epoch == 1 && validates_once_per_epoch(t));
  }

  void on_fit_start(FitState& s) override { resolve_dir(s); }

  void on_batch_end(FitState& s, const std::string& stage, int64_t, const torch::Tensor&, int64_t) override {
    if (stage != "train" || skip(s) || every_n_train_steps_ < 1 || s.global_step % every_n_train_steps_ != 0) return;
    const auto candidates = monitor_values(s);
    if (o_.monitor && !candidates.count(*o_.monitor)) {
      defer_until_validation_ = true;  // a val metric: save once validation has logged it
      return;
    }
    save_topk(s, candidates);
    save_last(s, candidates);
  }

  void on_validation_end(FitState& s) override {
    if (!on_epoch_end_) save_after_epoch_or_validation(s);
  }
  void on_train_epoch_end(FitState& s) override {
    if (on_epoch_end_) save_after_epoch_or_validation(s);
  }

  // Lightning's on_exception: the template's name (no top-k ranking), and last.ckpt.
  void on_exception(FitState& s, const std::string& error) override {
    if (!o_.save_on_exception || skip(s)) return;
    const auto candidates = monitor_values(s);
    const auto path = free_name(candidates, "", "");
    save(s, path);
    save_last(s, candidates);
    if (s.process.main_rank) spdlog::info("ModelCheckpoint: saved {} at step {} after: {}", path, s.global_step, error);
  }

  void on_fit_end(FitState& s) override {
    if (save_last_ && last_checkpoint_saved_.empty() && !s.dev_run && s.global_step > 0)
      save_last(s, monitor_values(s));
  }

 private:
  // Once the run directory is known (a relative dirpath was made absolute by the config).
  void resolve_dir(const FitState& s) { dirpath_ = o_.dirpath ? fs::path(*o_.dirpath) : s.run_dir / "checkpoints"; }

  // What a file name or a monitor can use: the metrics plus epoch and step (ints).
  CheckpointValues monitor_values(const FitState& s) const {
    CheckpointValues v;
    for (const auto& [k, x] : monitor_candidates(s)) v[k] = {static_cast<float>(x), false};  // logged as float32
    v["epoch"] = {static_cast<double>(s.epoch), true};
    v["step"] = {static_cast<double>(s.global_step), true};
    return v;
  }

  bool skip(const FitState& s) const { return s.dev_run || s.global_step == last_global_step_saved_; }

  void save_after_epoch_or_validation(FitState& s) {
    if (skip(s)) return;
    const auto candidates = monitor_values(s);
    if (defer_until_validation_) {
      defer_until_validation_ = false;
      save_topk(s, candidates);
      save_last(s, candidates);
      return;
    }
    if (every_n_epochs_ >= 1 && (s.epoch + 1) % every_n_epochs_ == 0) save_topk(s, candidates);
    if (last_global_step_saved_ == s.global_step || (save_last_ == 2 && !last_checkpoint_saved_.empty()))
      save_last(s, candidates);
  }

  void save_topk(FitState& s, const CheckpointValues& candidates) {
    if (o_.save_top_k == 0) return;
    if (!o_.monitor) return save_none_monitor(s, candidates);
    const auto it = candidates.find(*o_.monitor);
    if (it == candidates.end()) {
      std::map<std::string, double> logged;
      for (const auto& [k, v] : candidates) logged[k] = v.first;
      throw UsageError("ModelCheckpoint: monitor '" + *o_.monitor + "' is not a logged metric (logged: " +
                       join_keys(logged) + ")");
    }
    const float current = static_cast<float>(it->second.first);
    if (in_top_k(current)) return update_best_and_save(s, current, candidates);
    if (o_.verbose)
      spdlog::info("Epoch {}, global step {}: '{}' was not in top {}", s.epoch, s.global_step, *o_.monitor,
                   o_.save_top_k);
  }

  bool in_top_k(float current) const {
    if (o_.save_top_k == -1 || static_cast<int64_t>(best_k_models_.size()) < o_.save_top_k) return true;
    return better_(current, score_at(kth_best_model_path_));
  }

  void update_best_and_save(FitState& s, float current, const CheckpointValues& candidates) {
    const auto k = o_.save_top_k == -1 ? static_cast<int64_t>(best_k_models_.size()) + 1 : o_.save_top_k;
    std::string del;
    if (static_cast<int64_t>(best_k_models_.size()) == k && k > 0) {
      del = kth_best_model_path_;
      erase_model(del);
    }
    if (std::isnan(current)) current = better_.worst();  // Lightning saves NaN as the worst score
    const auto path = free_name(candidates, "", del);
    current_score_ = current;
    best_k_models_.emplace_back(path, current);
    if (static_cast<int64_t>(best_k_models_.size()) == k) {
      kth_best_model_path_ = extreme(false);
      kth_value_ = score_at(kth_best_model_path_);
    }
    best_model_path_ = extreme(true);
    best_model_score_ = score_at(best_model_path_);
    if (o_.verbose)
      spdlog::info("Epoch {}, global step {}: '{}' reached {:.5f} (best {:.5f}), saving model to '{}' as top {}",
                   s.epoch, s.global_step, *o_.monitor, current, *best_model_score_, path, k);
    save(s, path);
    if (!del.empty()) remove_if_ours(s, del, path);
  }

  void save_none_monitor(FitState& s, const CheckpointValues& candidates) {
    const auto path = free_name(candidates, "", best_model_path_);
    const auto previous = std::exchange(best_model_path_, path);
    save(s, path);
    if (o_.save_top_k == 1 && !previous.empty()) remove_if_ours(s, previous, path);
  }

  void save_last(FitState& s, const CheckpointValues& candidates) {
    if (!save_last_) return;
    const auto path = free_name(candidates, "last", last_model_path_);
    const auto previous = std::exchange(last_model_path_, path);
    if (save_last_ == 2 && !last_checkpoint_saved_.empty() && o_.save_top_k != 0) link(s, last_checkpoint_saved_, path);
    else save(s, path);
    if (!previous.empty()) remove_if_ours(s, previous, path);
  }

  // Lightning's _get_metric_interpolated_filepath_name: the template's name, then
  // -v1, -v2, ... while that file exists (unless it is `replacing`).
  std::string free_name(const CheckpointValues& candidates, const std::string& fixed_name,
                        const std::string& replacing) const {
    const auto base = fixed_name.empty() ? format_name(candidates) : fixed_name;
    auto path = (dirpath_ / (base + ".ckpt")).string();
    std::error_code ec;
    for (int v = 1; o_.enable_version_counter && fs::exists(path, ec) && path != replacing; ++v)
      path = (dirpath_ / (base + "-v" + std::to_string(v) + ".ckpt")).string();
    return path;
  }

  // Lightning's _format_checkpoint_name: each "{name" becomes "name={0[name]" (or
  // "{0[name]" without auto_insert_metric_name), longest names first, then str.format.
  std::string format_name(CheckpointValues values) const {
    std::string name = filename_template();
    auto groups = template_groups(name);
    std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
    for (const auto& g : groups) {
      const auto key = g.substr(1);
      if (o_.auto_insert_metric_name) replace_all(name, g, key + "={" + key);
      replace_all(name, g, "{0[" + key + "]");
      values.emplace(key, std::pair<double, bool>{0.0, true});  // Lightning formats a missing metric as 0
    }
    return format_fields(name, values, where_filename());
  }

  std::string filename_template() const { return o_.filename.value_or("{epoch}-{step}"); }
  std::string where_filename() const {
    return "ModelCheckpoint 'filename' '" + shown_in_message(filename_template(), 120) + "'";
  }

  // When the config is read, before any run folder exists: the template's fields
  // and format specs (metrics are floats, as logged), and a name that stays inside
  // dirpath (Lightning's dirpath is the user's folder; filename only names a file
  // in it, or in folders below it) with parts a file system takes.
  void check_filename() const {
    CheckpointValues probe{{"epoch", {0.0, true}}, {"step", {0.0, true}}};
    for (const auto& group : template_groups(filename_template()))
      probe.emplace(group.substr(1), std::pair{0.0, false});
    const auto name = format_name(probe) + "-v1.ckpt";
    if (!stays_below(name))
      throw UsageError(where_filename() + " must stay inside dirpath (not an absolute path, no '..'); "
                       "choose the folder with dirpath");
    for (const auto& part : fs::path(name))
      if (part.string().size() > kMaxNamePart)
        throw UsageError(where_filename() + " makes a file or folder name longer than " +
                         std::to_string(kMaxNamePart) + " bytes");
  }

  static void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  }

  void save(FitState& s, const std::string& path) {
    last_global_step_saved_ = s.global_step;
    last_checkpoint_saved_ = path;
    if (!s.process.main_rank) return;
    // filename's folders stay below dirpath by name (check_filename); one of them
    // replaced by a link must not take the checkpoint elsewhere.
    if (!really_below(path, dirpath_))
      throw InputError("ModelCheckpoint: not writing " + shown_in_message(path) +
                       ": a symbolic link in it leads out of dirpath " + shown_in_message(dirpath_.string()) +
                       "; remove the link");
    write_checkpoint(s, path, o_.save_weights_only);  // after the ranking above: the file holds its new state
    s.actions.checkpoint_saved(path);
  }

  void link(FitState& s, const std::string& target, const std::string& path) {
    if (!s.process.main_rank) return;
    std::error_code ec;
    fs::remove(path, ec);
    fs::create_directory_symlink(fs::path(target).filename(), path, ec);  // relative, as Lightning's
    if (ec) fs::copy_file(target, path, fs::copy_options::overwrite_existing);
  }

  // Lightning's _should_remove_checkpoint: never the file the run resumed from,
  // nor one outside dirpath. Outside means really outside: a path restored from a
  // checkpoint may name any file, and a folder below dirpath may since have been
  // replaced by a link to another place; such a file is kept, with one warning.
  void remove_if_ours(const FitState& s, const std::string& previous, const std::string& current) const {
    if (!s.process.main_rank || previous == current) return;
    std::error_code ec;
    const auto prev = fs::absolute(previous, ec);
    if (!s.resumed_from.empty() &&
        (prev == fs::absolute(s.resumed_from, ec) || fs::equivalent(prev, s.resumed_from, ec)))
      return;
    const auto dir = fs::absolute(dirpath_, ec).lexically_normal();
    const auto rel = prev.lexically_normal().lexically_relative(dir);
    if (rel.empty() || *rel.begin() == "..") {
      spdlog::warn("ModelCheckpoint: keeping {}: it is outside dirpath {}", shown_in_message(previous),
                   shown_in_message(dirpath_.string()));
      return;
    }
    const auto real = resolved_below(prev, dirpath_);
    if (real.empty()) {
      spdlog::warn("ModelCheckpoint: keeping {}: a symbolic link in its path leads out of dirpath {}",
                   shown_in_message(previous), shown_in_message(dirpath_.string()));
      return;
    }
    fs::remove(real, ec);  // the path just checked, not resolved again
  }

  float score_at(const std::string& path) const {
    for (const auto& [p, v] : best_k_models_)
      if (p == path) return v;
    return better_.worst();
  }
  void erase_model(const std::string& path) {
    best_k_models_.erase(std::remove_if(best_k_models_.begin(), best_k_models_.end(),
                                        [&](const auto& e) { return e.first == path; }),
                         best_k_models_.end());
  }
  // The best (or, best=false, the worst) path; the first of equals, as Python's min/max.
  std::string extreme(bool best) const {
    const std::pair<std::string, float>* pick = nullptr;
    for (const auto& e : best_k_models_) {
      if (!pick) pick = &e;
      else if (best ? better_(e.second, pick->second) : better_(pick->second, e.second)) pick = &e;
    }
    return pick ? pick->first : "";
  }

  ModelCheckpointOptions o_;
  MonitorMode better_;
  int64_t every_n_epochs_ = 0, every_n_train_steps_ = 0;
  int save_last_ = 0;  // 0 no, 1 yes, 2 link
  bool on_epoch_end_ = false, defer_until_validation_ = false;
  fs::path dirpath_;
  int64_t last_global_step_saved_ = 0;  // no checkpoint before the first step
  std::string last_checkpoint_saved_;
  std::vector<std::pair<std::string, float>> best_k_models_;  // in insertion order, as Lightning's dict
  std::string kth_best_model_path_, best_model_path_, last_model_path_;
  float kth_value_;
  std::optional<float> best_model_score_, current_score_;
};

const bool kModelCheckpointRegistered = register_callback(
    {{"lightning.pytorch.callbacks.ModelCheckpoint", "callback", model_checkpoint_binding().type(),
      "Lightning's checkpoints: top-k by a monitored metric, every N epochs or steps, last.ckpt.",
      config::Support::kFull, "",
      {"pytorch_lightning.callbacks.ModelCheckpoint", "lightning.pytorch.callbacks.model_checkpoint.ModelCheckpoint"}},
     [](const YAML::Node& args) { return std::make_unique<ModelCheckpoint>(model_checkpoint_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
