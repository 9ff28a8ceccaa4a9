// salt.utils.scalers.RegressionTargetScaler as a regression task's `scaler`.
// Expected values: salt's formulas evaluated with /usr/bin/python3's torch 1.13
// (x = [2, 0.5, 3]), e.g. torch.log(x * 5); (x + 1) * 10; torch.exp(x * 0.5) - 1.
#include <gtest/gtest.h>

#include "support/one_line_error.h"

#include "config/validate.h"
#include "models/tasks/regression_task.h"
#include "models/tasks/target_scaler.h"
#include "models/model_test_helpers.h"

namespace salt::models {
namespace {

using testing::identity_dense;
using testing::make_identity;

void expect_near(const torch::Tensor& a, std::vector<float> b) {
  ASSERT_EQ(a.numel(), static_cast<int64_t>(b.size()));
  for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(a[static_cast<int64_t>(i)].item<float>(), b[i], 1e-5) << i;
}

TargetScaler scaler() {
  return TargetScaler({{"pt", {"log", 5, 0, 1, 0}},
                       {"Lxy", {"log", 1, 1, 0.2, 0}},
                       {"deta", {"linear", 1, 1, 10, 0}},
                       {"m", {"exp", 0.5, 0, 1, -1}}});
}

TEST(TargetScaler, SaltsFormulasAndTheirInverses) {
  const auto x = torch::tensor({2.0f, 0.5f, 3.0f});
  const auto s = scaler();
  expect_near(s.scale("pt", x), {2.3025851f, 0.9162908f, 2.7080503f});
  expect_near(s.scale("Lxy", x), {0.2197225f, 0.0810930f, 0.2772589f});
  expect_near(s.scale("deta", x), {30.0f, 15.0f, 40.0f});
  expect_near(s.scale("m", x), {1.7182817f, 0.2840254f, 3.4816890f});
  for (const char* t : {"pt", "Lxy", "deta", "m"}) expect_near(s.inverse(t, s.scale(t, x)), {2.0f, 0.5f, 3.0f});
}

TEST(TargetScaler, RegressionTaskTrainsOnScaledTargetsAndPredictsInTargetUnits) {
  RegressionTaskImpl task(TaskOptions("reg", "jets", identity_dense(2), LossOptions(LossKind::MSE)),
                          RegressionOptions().targets({"pt", "deta"}).scaler(scaler()));
  make_identity(task);
  const auto preds = torch::tensor({2.0f, 30.0f, 1.0f, 14.0f}).view({2, 2});
  Labels labels;
  labels["jets"]["pt"] = torch::tensor({2.0f, 0.5f});   // scaled: 2.3025851, 0.9162908
  labels["jets"]["deta"] = torch::tensor({2.0f, 0.5f});  // scaled: 30, 15
  const double expected =
      (std::pow(2.0 - 2.3025851, 2) + std::pow(30.0 - 30.0, 2) + std::pow(1.0 - 0.9162908, 2) + std::pow(14.0 - 15.0, 2)) / 4;
  EXPECT_NEAR(task.forward(preds, {}, {}, &labels, {}).loss.item<double>(), expected, 1e-5);
  const auto cols = task.predict(preds, {}, nullptr, "m");
  // exp(2) / 5 = 1.4778112, (30 / 10) - 1 = 2, exp(1) / 5 = 0.5436564, 14 / 10 - 1 = 0.4
  expect_near(cols.values.flatten(), {1.4778112f, 2.0f, 0.5436564f, 0.4f});
}

TEST(TargetScaler, ConfigErrorsNameTheKey) {
  const auto node = [](const std::string& scales) {
    config::ComponentNode n;
    n.class_path = "salt.utils.scalers.RegressionTargetScaler";
    n.init_args = YAML::Load("{scales: " + scales + "}");
    return n;
  };
  auto msg = salt::testing::one_line_error_of<UsageError>(
      [&] { read_target_scaler(node("{pt: {op: log, x_scale: 0}}"), "tasks[0].init_args.scaler"); });
  EXPECT_NE(msg.find("tasks[0].init_args.scaler.init_args.scales.pt: x_scale and op_scale must be non-zero"),
            std::string::npos)
      << msg;
  msg = salt::testing::one_line_error_of<UsageError>([&] {
    RegressionTaskImpl(TaskOptions("reg", "jets", identity_dense(2), LossOptions(LossKind::MSE)),
                       RegressionOptions().targets({"pt", "eta"}).scaler(scaler()));
  });
  EXPECT_NE(msg.find("task 'reg': the scaler has no scale for the target 'eta'"), std::string::npos) << msg;
  msg = salt::testing::one_line_error_of<UsageError>([&] {
    RegressionTaskImpl(TaskOptions("reg", "jets", identity_dense(1), LossOptions(LossKind::MSE)),
                       RegressionOptions().targets({"pt"}).scaler(scaler()).target_denominators({"x"}));
  });
  EXPECT_NE(msg.find("can only use a single scaling method"), std::string::npos) << msg;
  msg = salt::testing::one_line_error_of<UsageError>([&] {
    RegressionTaskImpl(TaskOptions("g", "jets", identity_dense(2), LossOptions(LossKind::GaussianNLL)),
                       RegressionOptions().targets({"pt"}).gaussian(true).scaler(scaler()));
  });
  EXPECT_NE(msg.find("task 'g': GaussianRegressionTask cannot use a scaler"), std::string::npos) << msg;
}

}  // namespace
}  // namespace salt::models
