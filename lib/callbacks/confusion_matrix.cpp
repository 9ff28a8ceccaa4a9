// salt.callbacks.ConfusionMatrixCallback: over each validation, the counts of
// (true class, predicted class = argmax of the task's output) for one
// classification task (padded constituents and ignored labels left out), summed
// over ranks. salt sends it to Comet; salt-cpp writes
// <run>/confusion_matrix/<task>_epoch=NNN.png/.pdf, and gives the logger (the
// TensorBoard files) the picture and the counts as a markdown table, tag
// confusion_matrix/<task>. class_names_override renames the classes (a list, or
// a map of some names). Rank 0 writes; nothing under fast_dev_run.
#include <spdlog/spdlog.h>

#include <cstdio>

#include "training/callback_registry.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/path_join.h"
#include "models/tasks/classification_task.h"
#include "plot/confusion.h"

namespace salt::callbacks {
namespace {
namespace fs = std::filesystem;

struct ConfusionMatrixOptions {
  std::string task_name;
  YAML::Node class_names_override;  // null, a list of names or a map old -> new
};

const config::Binding<ConfusionMatrixOptions>& confusion_matrix_binding() {
  using namespace config;
  static const auto b =
      Binding<ConfusionMatrixOptions>({})
          .required("task_name", SALT_FIELD(task_name), "The classification task.", t_str())
          .custom(field_null("class_names_override", t_union({t_list(t_str()), t_dict(t_str()), t_null()}),
                             "Class names to show: a list, or a map of some of the task's names to new ones."),
                  [](ConfusionMatrixOptions& o, const YAML::Node& n) { o.class_names_override = n; });
  return b;
}

class ConfusionMatrixCallback : public Callback {
 public:
  // The task's name becomes a file name: refused when the config is read if it would leave the plot folder.
  explicit ConfusionMatrixCallback(ConfusionMatrixOptions o) : o_(std::move(o)) {
    join_below("plots", o_.task_name, "ConfusionMatrixCallback 'task_name'");
  }

  // Refused before anything is written: the task must be a classification task.
  void on_setup(FitState& s) override {
    std::vector<std::string> names;
    for (const auto& t : s.setup->model->model->task_list()) {
      names.push_back(t->name());
      if (t->name() == o_.task_name) task_ = std::dynamic_pointer_cast<models::ClassificationTaskImpl>(t);
    }
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    if (!task_)
      throw UsageError("ConfusionMatrixCallback: task_name '" + o_.task_name + "' is not a classification task of the model (" +
                       all + ")");
    classes_ = display_names(task_->class_names());
  }

  void on_epoch_start(FitState&, const std::string& stage, int64_t) override {
    if (stage == "val") matrix_.emplace(classes_);
  }

  void on_validation_batch(FitState&, const models::ModelOutput& out, const Batch& batch) override {
    if (!matrix_) return;
    const auto& input = task_->input_name();
    const auto pred = out.preds.at(input).at(task_->name()).argmax(-1).to(torch::kCPU).reshape({-1});
    const auto it = batch.pad_masks.find(input);
    const auto mask = it == batch.pad_masks.end() ? torch::Tensor() : it->second;
    const auto truth = task_->prepare_labels(batch.labels.at(input).at(task_->label_names()[0]), mask)
                           .to(torch::kCPU)
                           .reshape({-1});
    const auto p = pred.accessor<int64_t, 1>();
    const auto t = truth.accessor<int64_t, 1>();
    const auto n = static_cast<int64_t>(classes_.size());
    for (int64_t i = 0; i < t.size(0); ++i)
      if (t[i] >= 0 && t[i] < n) ++matrix_->at(static_cast<std::size_t>(t[i]), static_cast<std::size_t>(p[i]));
  }

  void on_validation_end(FitState& s) override {
    if (!matrix_) return;
    std::vector<double> counts(matrix_->counts.begin(), matrix_->counts.end());
    if (s.actions.sum_over_ranks) counts = s.actions.sum_over_ranks(counts);  // every rank takes part
    for (std::size_t i = 0; i < counts.size(); ++i) matrix_->counts[i] = static_cast<int64_t>(counts[i]);
    if (s.process.main_rank && !s.dev_run) write(s);
    matrix_.reset();
  }

 private:
  std::vector<std::string> display_names(const std::vector<std::string>& task_names) const {
    const auto& o = o_.class_names_override;
    std::vector<std::string> names = task_names;
    if (o && o.IsSequence()) {
      if (o.size() != task_names.size())
        throw UsageError("ConfusionMatrixCallback: class_names_override has " + std::to_string(o.size()) +
                         " names, task '" + o_.task_name + "' has " + std::to_string(task_names.size()) + " classes");
      for (std::size_t i = 0; i < names.size(); ++i) names[i] = o[i].as<std::string>();
    } else if (o && o.IsMap()) {
      for (auto& n : names)
        if (o[n]) n = o[n].as<std::string>();
    }
    return names;
  }

  void write(FitState& s) {
    char epoch[32];
    std::snprintf(epoch, sizeof epoch, "epoch=%03lld", static_cast<long long>(s.epoch));
    const std::string title = o_.task_name + ", " + epoch + " (validation)";
    const auto dir = s.run_dir / "confusion_matrix";
    create_directories_or_fail(dir, "confusion matrix directory");
    plot::save_confusion_matrix(*matrix_, title, join_below(dir, o_.task_name + "_" + epoch, "ConfusionMatrixCallback 'task_name'"));
    const std::string tag = "confusion_matrix/" + o_.task_name;
    if (s.actions.log_image) s.actions.log_image(tag, plot::confusion_matrix_png(*matrix_, title));
    if (s.actions.log_text) s.actions.log_text(tag, plot::confusion_matrix_markdown(*matrix_));
  }

  ConfusionMatrixOptions o_;
  std::shared_ptr<models::ClassificationTaskImpl> task_;
  std::vector<std::string> classes_;
  std::optional<plot::ConfusionMatrix> matrix_;
};

const bool kConfusionMatrixRegistered = register_callback(
    {{"salt.callbacks.ConfusionMatrixCallback", "callback", confusion_matrix_binding().type(),
      "The validation confusion matrix of a classification task, as a picture per epoch and in the logger.",
      config::Support::kFull, "", {"salt.callbacks.confusion_matrix.ConfusionMatrixCallback"}},
     [](const YAML::Node& args) { return std::make_unique<ConfusionMatrixCallback>(confusion_matrix_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
