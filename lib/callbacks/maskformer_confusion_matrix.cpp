// salt.callbacks.MaskformerConfusionMatrix: over each validation (every
// log_every_n_epochs), the counts of (target class, predicted class = argmax of the
// class logits) over every object slot of a MaskFormer, the objects matched to the
// targets as in the loss; summed over ranks. salt sends it to Comet; salt-cpp writes
// <run>/confusion_matrix/objects_epoch=NNN.png/.pdf, gives the logger the picture and
// the table (tag confusion_matrix/objects) and logs the slot accuracy it implies.
#include <spdlog/spdlog.h>

#include <cstdio>

#include "training/callback_registry.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "models/maskformer/object_targets.h"
#include "plot/confusion.h"

namespace salt::callbacks {
namespace {

struct Options {
  bool only_val = true;
  int64_t log_every_n_epochs = 1;
  bool normalize = true;
};

const config::Binding<Options>& maskformer_confusion_matrix_binding() {
  using namespace config;
  static const auto b =
      Binding<Options>({})
          .arg("only_val", SALT_FIELD(only_val), "At validation only (salt's default; false is not available).")
          .arg("log_every_n_epochs", SALT_FIELD(log_every_n_epochs), "Draw it every N epochs.", at_least(t_int(), 1))
          .arg("normalize", SALT_FIELD(normalize),
               "Colour by the fraction of each target class (salt-cpp's pictures always show fractions and counts).");
  return b;
}

class MaskformerConfusionMatrix : public Callback {
 public:
  explicit MaskformerConfusionMatrix(Options o) : o_(o) {}

  void on_setup(FitState& s) override {
    if (!o_.only_val) throw UsageError("MaskformerConfusionMatrix: only_val: false is not in salt-cpp");
    const auto& model = s.setup->model->model;
    if (!model->mask_decoder) throw UsageError("MaskformerConfusionMatrix: the model has no mask_decoder");
    for (const auto& c : model->mask_decoder->options().mf.object.object_classes) classes_.push_back(c.name);
  }

  void on_epoch_start(FitState& s, const std::string& stage, int64_t) override {
    if (stage == "val" && (s.epoch + 1) % o_.log_every_n_epochs == 0) matrix_.emplace(classes_);
  }

  void on_validation_batch(FitState& s, const models::ModelOutput& out, const Batch& batch) override {
    const auto& p = out.objects.objects;
    if (!matrix_ || !p.class_logits.defined() || batch.labels.empty()) return;
    const auto& o = s.setup->model->model->mask_decoder->options();
    const auto truth = models::object_targets(batch.labels, batch.pad_masks, o.mf, o.num_objects)
                           .object_class.to(torch::kCPU).reshape({-1});
    const auto pred = p.class_logits.detach().argmax(-1).to(torch::kCPU).reshape({-1});
    const auto t = truth.accessor<int64_t, 1>();
    const auto q = pred.accessor<int64_t, 1>();
    for (int64_t i = 0; i < t.size(0); ++i) ++matrix_->at(static_cast<size_t>(t[i]), static_cast<size_t>(q[i]));
  }

  void on_validation_end(FitState& s) override {
    if (!matrix_) return;
    std::vector<double> counts(matrix_->counts.begin(), matrix_->counts.end());
    if (s.actions.sum_over_ranks) counts = s.actions.sum_over_ranks(counts);
    for (size_t i = 0; i < counts.size(); ++i) matrix_->counts[i] = static_cast<int64_t>(counts[i]);
    if (s.process.main_rank && !s.dev_run) write(s);
    matrix_.reset();
  }

 private:
  void write(FitState& s) {
    char epoch[32];
    std::snprintf(epoch, sizeof epoch, "epoch=%03lld", static_cast<long long>(s.epoch));
    const std::string title = std::string("objects, ") + epoch + " (validation)";
    const auto dir = s.run_dir / "confusion_matrix";
    create_directories_or_fail(dir, "confusion matrix directory");
    plot::save_confusion_matrix(*matrix_, title, dir / (std::string("objects_") + epoch));
    if (s.actions.log_image) s.actions.log_image("confusion_matrix/objects", plot::confusion_matrix_png(*matrix_, title));
    if (s.actions.log_text) s.actions.log_text("confusion_matrix/objects", plot::confusion_matrix_markdown(*matrix_));
    int64_t diagonal = 0, total = 0;
    for (size_t i = 0; i < classes_.size(); ++i)
      for (size_t j = 0; j < classes_.size(); ++j) (i == j ? diagonal : total) += matrix_->at(i, j);
    total += diagonal;
    spdlog::info("MaskformerConfusionMatrix {}: {} of {} object slots classified right ({:.6f})", epoch, diagonal, total,
                 total ? static_cast<double>(diagonal) / static_cast<double>(total) : 0.0);
  }

  Options o_;
  std::vector<std::string> classes_;
  std::optional<plot::ConfusionMatrix> matrix_;
};

const bool kMaskformerConfusionMatrixRegistered = register_callback(
    {{"salt.callbacks.MaskformerConfusionMatrix", "callback", maskformer_confusion_matrix_binding().type(),
      "A MaskFormer's object-class confusion matrix at validation, as a picture per epoch and in the logger.",
      config::Support::kFull, "", {"salt.callbacks.maskformer_confusion_matrix.MaskformerConfusionMatrix"}},
     [](const YAML::Node& args) { return std::make_unique<MaskformerConfusionMatrix>(maskformer_confusion_matrix_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
