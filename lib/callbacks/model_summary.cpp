// lightning.pytorch.callbacks.ModelSummary: each component with its parameter
// count, printed once at the start of a fit (rank 0). Lightning adds one with
// max_depth 1 when the config has none and enable_model_summary is not false.
#include <cstdio>

#include "training/callback_registry.h"
#include "models/summary.h"

namespace salt::callbacks {
namespace {

struct ModelSummaryOptions {
  int64_t max_depth = 1;
};

const config::Binding<ModelSummaryOptions>& model_summary_binding() {
  static const auto b = config::Binding<ModelSummaryOptions>({}).arg("max_depth", SALT_FIELD(max_depth),
                                                                      "Depth of modules in the summary.");
  return b;
}

class ModelSummary : public Callback {
 public:
  explicit ModelSummary(ModelSummaryOptions o) : o_(o) {}
  void on_fit_start(FitState& s) override {
    if (!s.setup->run.trainer.enable_model_summary || !s.process.main_rank) return;
    std::fprintf(stderr, "%s", models::model_summary(*s.setup->model, static_cast<int>(o_.max_depth)).c_str());
  }

 private:
  ModelSummaryOptions o_;
};

const bool kModelSummaryRegistered = register_callback(
    {{"lightning.pytorch.callbacks.ModelSummary", "callback", model_summary_binding().type(),
      "Prints each component with its parameter count.", config::Support::kFull, "",
      {"pytorch_lightning.callbacks.ModelSummary", "lightning.pytorch.callbacks.RichModelSummary",
       "pytorch_lightning.callbacks.RichModelSummary"}},
     [](const YAML::Node& args) { return std::make_unique<ModelSummary>(model_summary_binding().read(args)); },
     [](const training::TrainerConfig& t) { return t.enable_model_summary; }});

}  // namespace
}  // namespace salt::callbacks
