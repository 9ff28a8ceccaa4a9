// Tasks' sample_weight against losses computed by hand on tiny batches (salt's
// ClassificationTask.apply_sample_weight and RegressionTaskBase.nan_loss), and its
// config key.
#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.h"
#include "models/model_test_helpers.h"
#include "models/packing/common.h"
#include "models/packing/forward_context.h"
#include "models/tasks/classification_task.h"
#include "models/tasks/regression_task.h"

using namespace salt::models;

namespace {

using salt::models::testing::identity_dense;
using salt::models::testing::make_identity;

double neg_log_softmax(const std::vector<double>& z, int c) {
  double s = 0;
  for (double v : z) s += std::exp(v);
  return std::log(s) - z[c];
}

LossOptions none(LossKind kind) { return LossOptions(kind).reduction("none"); }

}  // namespace

TEST(SampleWeight, ClassificationJets) {
  ClassificationTaskImpl task(TaskOptions("jc", "jets", identity_dense(3), none(LossKind::CrossEntropy))
                                  .weight(2.0)
                                  .sample_weight("w"),
                              ClassificationOptions("lab").class_names({"a", "b", "c"}));
  make_identity(task);
  EXPECT_EQ(task.label_names(), (std::vector<std::string>{"lab", "w"}));
  std::vector<std::vector<double>> z = {{1.0, 0.5, -1.0}, {0.2, 0.1, 2.0}, {3.0, 0.0, 0.0}};
  auto x = torch::tensor({1.0, 0.5, -1.0, 0.2, 0.1, 2.0, 3.0, 0.0, 0.0}).view({3, 3}).to(torch::kFloat);
  Labels labels;
  labels["jets"]["lab"] = torch::tensor({0, 2, -2}, torch::kLong);  // the third jet is ignored
  labels["jets"]["w"] = torch::tensor({0.5f, 3.0f, 7.0f});
  // salt: (loss * w).mean() over all 3 jets (the ignored one adds 0), times the task weight.
  const double expected = 2.0 * (0.5 * neg_log_softmax(z[0], 0) + 3.0 * neg_log_softmax(z[1], 2) + 0.0) / 3;
  EXPECT_NEAR(task.forward(x, {}, {}, &labels, {}).loss.item<double>(), expected, 1e-5);
}

TEST(SampleWeight, ClassificationBCEAndTracks) {
  ClassificationTaskImpl bce(TaskOptions("b", "jets", identity_dense(1), none(LossKind::BCEWithLogits)).sample_weight("w"),
                             ClassificationOptions("lab").class_names({"sig"}));
  make_identity(bce);
  auto x = torch::tensor({0.5f, -2.0f}).view({2, 1});
  Labels labels;
  labels["jets"]["lab"] = torch::tensor({1, 0}, torch::kLong);
  labels["jets"]["w"] = torch::tensor({2.0f, 0.25f});
  auto softplus = [](double v) { return std::log1p(std::exp(v)); };
  const double expected = (2.0 * softplus(-0.5) + 0.25 * softplus(-2.0)) / 2;
  EXPECT_NEAR(bce.forward(x, {}, {}, &labels, {}).loss.item<double>(), expected, 1e-5);

  // Constituents: the mean runs over all B x L slots, padded ones adding 0 (salt).
  ClassificationTaskImpl trk(TaskOptions("t", "tracks", identity_dense(2), none(LossKind::CrossEntropy)).sample_weight("w"),
                             ClassificationOptions("lab").class_names({"a", "b"}));
  make_identity(trk);
  auto tx = torch::tensor({1.0f, 0.0f, 0.0f, 2.0f, 5.0f, 5.0f}).view({1, 3, 2});
  auto pad = torch::tensor({false, false, true}).view({1, 3});
  Labels tl;
  tl["tracks"]["lab"] = torch::tensor({1, 1, 0}, torch::kLong).view({1, 3});
  tl["tracks"]["w"] = torch::tensor({3.0f, 0.5f, 9.0f}).view({1, 3});
  const double t_expected = (3.0 * neg_log_softmax({1, 0}, 1) + 0.5 * neg_log_softmax({0, 2}, 1)) / 3;
  EXPECT_NEAR(trk.forward(tx, pad, {}, &tl, {}).loss.item<double>(), t_expected, 1e-5);
  // The packed path (valid tokens only) divides by the same B x L.
  auto idx = TokenIndex::from_mask(pad);
  EXPECT_NEAR(trk.forward_packed(idx.gather(tx), idx, pad, {}, &tl, {}).loss.item<double>(), t_expected, 1e-5);
}

// Bucketed (or static) rows take padded slots in as padding rows: their weights, NaN
// where the file's selections removed a track, never reach the loss (before: 0 x NaN,
// a NaN loss where plain packing's was finite).
TEST(SampleWeight, PaddingRowsWeightsNeverReachTheLoss) {
  ClassificationTaskImpl trk(TaskOptions("t", "tracks", identity_dense(2), none(LossKind::CrossEntropy)).sample_weight("w"),
                             ClassificationOptions("lab").class_names({"a", "b"}));
  make_identity(trk);
  torch::manual_seed(8);
  const int64_t length = 40;
  auto x = torch::randn({1, length, 2});
  auto pad = torch::arange(length).ge(33).view({1, length});  // 33 valid tracks: a bucket of 34 rows
  Labels labels;
  labels["tracks"]["lab"] = torch::randint(0, 2, {1, length}, torch::kLong);
  labels["tracks"]["w"] = (torch::rand({1, length}) + 0.5).masked_fill(pad, std::nan(""));
  ForwardContext bucketed;
  bucketed.kernels.bucketed_rows = true;
  const auto plain_idx = TokenIndex::from_mask(pad), idx = TokenIndex::from_mask(pad, bucketed);
  ASSERT_EQ(idx.flat.size(0), 34);
  const auto plain = trk.forward_packed(plain_idx.gather(x), plain_idx, pad, {}, &labels, {}).loss;
  const auto padded = trk.forward_packed(idx.gather(x), idx, pad, {}, &labels, bucketed).loss;
  ASSERT_TRUE(plain.isfinite().item<bool>());
  EXPECT_NEAR(padded.item<double>(), plain.item<double>(), 1e-6);
}

TEST(SampleWeight, Regression) {
  RegressionTaskImpl task(TaskOptions("r", "jets", identity_dense(2), none(LossKind::MSE)).sample_weight("w"),
                          RegressionOptions().targets({"t1", "t2"}));
  make_identity(task);
  EXPECT_EQ(task.label_names(), (std::vector<std::string>{"t1", "t2", "w"}));
  auto x = torch::tensor({0.5f, 1.0f, -1.0f, 2.0f}).view({2, 2});
  Labels labels;
  labels["jets"]["t1"] = torch::tensor({1.0f, 0.0f});
  labels["jets"]["t2"] = torch::tensor({0.0f, 4.0f});
  labels["jets"]["w"] = torch::tensor({2.0f, 0.5f});
  // salt: each jet's weight multiplies both targets' squared errors; mean over 2 x 2.
  const double expected = (2.0 * (0.25 + 1.0) + 0.5 * (1.0 + 4.0)) / 4;
  EXPECT_NEAR(task.forward(x, {}, {}, &labels, {}).loss.item<double>(), expected, 1e-6);

  // GaussianRegressionTask: the weight multiplies the per-jet NLL.
  RegressionTaskImpl g(TaskOptions("g", "jets", identity_dense(2), none(LossKind::GaussianNLL)).sample_weight("w"),
                       RegressionOptions().targets({"t1"}).gaussian(true));
  make_identity(g);
  auto gx = torch::tensor({1.0f, 0.0f, 2.0f, 1.0f}).view({2, 2});  // means 1, 2; raw variances 0, 1
  auto nll = [](double mean, double raw_var, double t) {
    const double var = std::log1p(std::exp(raw_var));
    return 0.5 * (std::log(var) + (mean - t) * (mean - t) / var);
  };
  const double g_expected = (2.0 * nll(1.0, 0.0, 1.0) + 0.5 * nll(2.0, 1.0, 0.0)) / 2;
  EXPECT_NEAR(g.forward(gx, {}, {}, &labels, {}).loss.item<double>(), g_expected, 1e-5);
}

TEST(SampleWeight, ConfigKey) {
  using salt::models::testing::build;
  using salt::models::testing::kDIPSYaml;
  using salt::models::testing::make_context;
  std::string yaml = kDIPSYaml;
  yaml.replace(yaml.find("label: HadronConeExclTruthLabelID"), 33, "label: HadronConeExclTruthLabelID\n            sample_weight: w");
  // salt asserts reduction == "none" with sample weights.
  try {
    build(yaml, make_context(2, 21));
    ADD_FAILURE() << "built with reduction mean";
  } catch (const salt::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("init_args.sample_weight: sample weights need the loss's reduction: none"),
              std::string::npos)
        << e.what();
  }
  yaml.replace(yaml.find("loss: torch.nn.CrossEntropyLoss"), 31,
               "loss: {class_path: torch.nn.CrossEntropyLoss, init_args: {reduction: none}}");
  auto model = build(yaml, make_context(2, 21));
  const auto& task = model->model->task_list().at(0);
  EXPECT_EQ(task->sample_weight(), std::optional<std::string>("w"));
  EXPECT_NE(task->sample_weight_key().find("init_args.sample_weight"), std::string::npos) << task->sample_weight_key();
  EXPECT_EQ(model->required_labels().at("jets"), (std::vector<std::string>{"HadronConeExclTruthLabelID", "w"}));
}
