// A model component defined and registered in this one file (a classification
// task that divides its input by a temperature) shows up everywhere a shipped
// one does: `salt fit --help`, --print_config (its defaults filled in),
// validation errors, and a fit that trains it.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "models/model_factory.h"
#include "models/registry.h"
#include "models/tasks/class_names.h"
#include "models/tasks/classification_task.h"
#include "support/in_process.h"
#include "training/loop/fit.h"

namespace salt::testing {
namespace {

using namespace salt::models;

int forward_calls = 0;

struct TemperatureTaskConfig : TaskBaseConfig {
  std::string label;
  double temperature = 2.0;
};

const config::Binding<TemperatureTaskConfig>& binding() {
  static const config::Binding<TemperatureTaskConfig> b = [] {
    config::Binding<TemperatureTaskConfig> t{TemperatureTaskConfig{}};
    bind_task_base(t);
    t.required("label", SALT_FIELD(label), "Label variable of input_name.")
        .arg("temperature", SALT_FIELD(temperature), "Inputs are divided by it.", config::at_least(config::t_float(), 0.01));
    return t;
  }();
  return b;
}

class TemperatureTaskImpl : public ClassificationTaskImpl {
 public:
  TemperatureTaskImpl(const TaskOptions& task, const ClassificationOptions& cls, double temperature)
      : ClassificationTaskImpl(task, cls), temperature_(temperature) {}
  TaskOutput forward(const torch::Tensor& x, const torch::Tensor& pad_mask, const torch::Tensor& context,
                     const Labels* labels, const ForwardContext& forward_context) override {
    ++forward_calls;
    return ClassificationTaskImpl::forward(x / temperature_, pad_mask, context, labels, forward_context);
  }

 private:
  double temperature_;
};

std::shared_ptr<TaskImpl> build(const YAML::Node& init_args, const BuildContext& ctx) {
  auto c = binding().read(init_args);
  finish_task_base(c, ctx);
  ClassificationOptions cls(c.label);
  cls.class_names(ctx.model->class_names(c.task.input_name(), c.label).value());
  return std::make_shared<TemperatureTaskImpl>(c.task, cls, c.temperature);
}

const bool kRegistered = register_model_component<std::shared_ptr<TaskImpl>>(
    {"salt_tests.TemperatureTask", "task", binding().type(), "Classification of inputs divided by a temperature."}, build);

// DL1 with its task replaced by the throwaway one (lists are replaced whole).
std::string overlay(const std::string& temperature_line) {
  return R"(
model:
  model:
    init_args:
      tasks:
        init_args:
          modules:
            - class_path: salt_tests.TemperatureTask
              init_args:
                name: jets_classification
                input_name: jets
                label: flavour_label
                loss: CrossEntropyLoss
                dense_config: { input_size: 64, output_size: 4, hidden_layers: [16] })" +
         temperature_line + "\n";
}

TEST(ThrowawayComponent, IsListedInHelpWithItsDefaults) {
  const auto help = config::run_help("fit");
  const auto at = help.find("salt_tests.TemperatureTask  [task] Classification of inputs divided by a temperature.");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(help.find("--init_args.temperature float >= 0.01  (default: 2", at), std::string::npos);
  EXPECT_NE(help.find("--init_args.dense_config.hidden_dim_scale int >= 1  (default: 2)", at), std::string::npos);
}

TEST(ThrowawayComponent, PrintConfigFillsItsDefaultsAndValidationNamesItsKeys) {
  TempDir dir;
  write_file(dir / "task.yaml", overlay(""));
  auto r = InProcessRun::resolve({"-c", InProcessRun::repo_config("DL1.yaml"), "-c", (dir / "task.yaml").string()});
  auto task = r.config["model"]["model"]["init_args"]["tasks"]["init_args"]["modules"][0];
  EXPECT_EQ(task["class_path"].Scalar(), "salt_tests.TemperatureTask");
  EXPECT_EQ(task["init_args"]["temperature"].Scalar(), "2.0");
  EXPECT_EQ(task["init_args"]["loss"]["class_path"].Scalar(), "torch.nn.CrossEntropyLoss");  // short name resolved
  EXPECT_EQ(task["init_args"]["dense_config"]["activation"].Scalar(), "ReLU");

  write_file(dir / "typo.yaml", overlay("\n                temperatur: 3"));
  try {
    InProcessRun::resolve({"-c", InProcessRun::repo_config("DL1.yaml"), "-c", (dir / "typo.yaml").string()});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find((dir / "typo.yaml").string() + ":"), std::string::npos) << what;  // file:line
    EXPECT_NE(what.find("init_args.temperatur': unknown key"), std::string::npos) << what;
    EXPECT_NE(what.find("did you mean 'temperature'?"), std::string::npos) << what;
  }
  write_file(dir / "cold.yaml", overlay("\n                temperature: 0"));
  EXPECT_THROW(InProcessRun::resolve({"-c", InProcessRun::repo_config("DL1.yaml"), "-c", (dir / "cold.yaml").string()}),
               UsageError);
}

TEST(ThrowawayComponent, TrainsInAFit) {
  InProcessRun run;
  write_file(run.dir() / "task.yaml", overlay("\n                temperature: 4"));
  auto r = InProcessRun::resolve({"-c", InProcessRun::repo_config("DL1.yaml"), "-c", (run.dir() / "task.yaml").string(),
                                  "--data.batch_size", "250", "--data.num_workers", "0", "--trainer.max_epochs", "1",
                                  "--trainer.enable_progress_bar", "false"});
  forward_calls = 0;
  auto result = training::fit(r);
  EXPECT_EQ(result.global_step, 4);
  EXPECT_GE(forward_calls, 4 + 2);  // 4 training batches and 2 validation batches at least
  ASSERT_EQ(result.checkpoints.size(), 1u);
  EXPECT_TRUE(result.last_val_metrics.count("val/jets_classification_loss"));
}

}  // namespace
}  // namespace salt::testing
