// salt.callbacks.PredictionWriter as a callback of `salt test`: the prediction
// file (see prediction_writer.h) at TestState::output, finished (renamed into
// place) only when the whole test set went through.
#include "models/salt_wrapper.h"
#include "training/callback_registry.h"

namespace salt::callbacks {
namespace {

struct PredictionWriterSettings {
  bool write_tracks = false;
  bool write_objects = false;
  bool half_precision = false;
  YAML::Node extra_vars{YAML::NodeType::Null};
};

const config::Binding<PredictionWriterSettings>& prediction_writer_callback_binding() {
  using namespace config;
  static const auto b =
      Binding<PredictionWriterSettings>({})
          .arg("write_tracks", SALT_FIELD(write_tracks), "Also write constituent-level outputs.")
          .arg("write_objects", SALT_FIELD(write_objects),
               "Also write a MaskFormer's objects (class probabilities, target class, regression), each "
               "constituent's <model>_MaskIndex and object_masks (truth_mask, mask_logits).")
          .arg("half_precision", SALT_FIELD(half_precision), "Write predictions as float16.")
          .unbound(field_null("object_classes", t_any(), "Output names of the global classification task."))
          .unsupported("name the classes with the task's class_names")
          .arg("extra_vars", SALT_FIELD(extra_vars), "Extra input-file variables to copy per input type.",
               t_optional(t_dict(t_list(t_str()))));
  return b;
}

class PredictionWriterCallback : public Callback {
 public:
  explicit PredictionWriterCallback(PredictionWriterSettings o) : o_(std::move(o)) {}

  void on_test_start(TestState& s) override {
    const auto& d = s.setup->run.data;
    PredictionWriterOptions options;
    options.test_file = s.test_file;
    options.output = s.output;
    options.global_object = d.global_object;
    options.input_map = d.input_map;
    options.num_rows = s.num_rows;
    options.write_tracks = o_.write_tracks;
    options.write_objects = o_.write_objects;
    options.half_precision = o_.half_precision;
    if (!o_.extra_vars.IsNull()) options.extra_vars = o_.extra_vars;
    // salt writes each input's outputs task by task in config order
    const auto& model = *s.setup->model->model;
    for (const auto* tasks : {&model.task_list(), &model.object_tasks()})
      for (const auto& task : *tasks) options.task_order.push_back(task->name());
    if (d.mf_config) {  // salt's null_raw_value: the null class's first raw value, else -1
      const auto& object = d.mf_config->object;
      options.object_id_label = object.id_label;
      options.object_class_label = object.class_label.value_or("");
      if (!object.object_classes.empty() && !object.object_classes.back().raw.empty())
        options.object_null_raw = object.object_classes.back().raw.front();
    }
    writer_ = std::make_unique<PredictionWriter>(options);
    s.wants_predictions = true;
  }
  void on_test_batch_end(TestState&, const Batch& batch, const Columns& columns) override { writer_->write(batch, columns); }
  void on_test_end(TestState& s) override {
    writer_->finish();
    s.written = true;
  }

 private:
  PredictionWriterSettings o_;
  std::unique_ptr<PredictionWriter> writer_;
};

const bool kPredictionWriterCallbackRegistered = register_callback(
    {{"salt.callbacks.PredictionWriter", "callback", prediction_writer_callback_binding().type(), "Writes `salt test` predictions to HDF5."},
     [](const YAML::Node& args) { return std::make_unique<PredictionWriterCallback>(prediction_writer_callback_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
