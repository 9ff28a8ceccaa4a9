// salt.callbacks.MaskformerMetrics: a MaskFormer's object metrics (class
// efficiency/purity, vertex match efficiency and fake rate, regression MAE; see
// models/maskformer/maskformer_metrics.h) over each validation, summed over ranks and logged
// as val/<metric> with the losses (metrics.csv, the loggers). salt logs each
// batch's value and Lightning averages them over batches; salt-cpp counts over the
// whole epoch, so every object weighs the same.
#include "training/callback_registry.h"
#include "core/errors.h"
#include "models/maskformer/maskformer_metrics.h"
#include "models/maskformer/object_targets.h"
#include "models/tasks/regression_task.h"

namespace salt::callbacks {
namespace {

struct MaskformerMetricsOptions {
  bool only_val = true;
  std::optional<std::map<std::string, std::vector<double>>> mask_criteria;  // name -> [recall, purity]
};

const config::Binding<MaskformerMetricsOptions>& maskformer_metrics_binding() {
  using namespace config;
  static const auto b =
      Binding<MaskformerMetricsOptions>({})
          .arg("only_val", SALT_FIELD(only_val), "Log at validation only (salt's default; false is not available).")
          .arg("mask_criteria", SALT_FIELD(mask_criteria),
               "{name: [min recall, min purity]} of a matched vertex (null: perfect [1, 1], loose [0.5, 0.5]).");
  return b;
}

class MaskformerMetricsCallback : public Callback {
 public:
  explicit MaskformerMetricsCallback(MaskformerMetricsOptions o) : o_(std::move(o)) {}

  void on_setup(FitState& s) override {
    if (!o_.only_val) throw UsageError("MaskformerMetrics: only_val: false (metrics on training batches) is not in salt-cpp");
    const auto& model = s.setup->model->model;
    if (!model->mask_decoder) throw UsageError("MaskformerMetrics: the model has no mask_decoder");
    std::vector<models::MaskCriterion> criteria;
    if (o_.mask_criteria) {
      for (const auto& [name, rp] : *o_.mask_criteria) {
        if (rp.size() != 2) throw UsageError("MaskformerMetrics: mask_criteria." + name + " needs [min recall, min purity]");
        criteria.push_back({name, rp[0], rp[1]});
      }
    } else {
      criteria = {{"perfect", 1, 1}, {"loose", 0.5, 0.5}};
    }
    std::vector<std::string> classes;
    for (const auto& c : model->mask_decoder->options().mf.object.object_classes) classes.push_back(c.name);
    for (const auto& t : model->task_list())
      if (t->input_name() == "objects" && t->name() == "regression") {  // salt's name for it
        regression_ = std::dynamic_pointer_cast<models::RegressionTaskImpl>(t);
        targets_ = regression_->label_names();
        targets_.resize(static_cast<size_t>(regression_->net->output_size()));
      }
    metrics_.emplace(classes, targets_, criteria);
  }

  void on_epoch_start(FitState&, const std::string& stage, int64_t) override {
    if (stage == "val" && metrics_) metrics_->reset();
  }

  void on_validation_batch(FitState& s, const models::ModelOutput& out, const Batch& batch) override {
    const auto& p = out.objects.objects;
    if (!p.class_logits.defined() || batch.labels.empty()) return;
    const auto& o = s.setup->model->model->mask_decoder->options();
    const auto t = models::object_targets(batch.labels, batch.pad_masks, o.mf, o.num_objects);
    torch::Tensor pred, truth;
    if (regression_ && p.tasks.count("regression")) {
      pred = regression_->predict(p.tasks.at("regression"), {}, nullptr, "").values;
      std::vector<torch::Tensor> cols;
      for (const auto& name : targets_) cols.push_back(t.labels.at(name).to(torch::kDouble));
      truth = torch::stack(cols, -1);
    }
    auto pad = batch.pad_masks.find(o.constituent_name);
    metrics_->add(p.class_logits, p.masks, t.object_class, t.masks,
                  pad == batch.pad_masks.end() ? torch::Tensor() : pad->second, pred, truth);
  }

  void add_val_metrics(FitState& s, Metrics& m) override {
    if (!metrics_) return;
    if (s.actions.sum_over_ranks) metrics_->set_counts(s.actions.sum_over_ranks(metrics_->counts()));
    for (const auto& [k, v] : metrics_->compute())
      if (std::isfinite(v)) m["val/" + k] = v;
  }

 private:
  MaskformerMetricsOptions o_;
  std::optional<models::MaskformerMetrics> metrics_;
  std::shared_ptr<models::RegressionTaskImpl> regression_;
  std::vector<std::string> targets_;
};

const bool kMaskformerMetricsRegistered = register_callback(
    {{"salt.callbacks.MaskformerMetrics", "callback", maskformer_metrics_binding().type(),
      "MaskFormer object metrics at validation: class efficiency/purity, vertex match efficiency/fake rate, MAE.",
      config::Support::kFull, "", {"salt.callbacks.maskformer_metrics.MaskformerMetrics"}},
     [](const YAML::Node& args) { return std::make_unique<MaskformerMetricsCallback>(maskformer_metrics_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
