// Each loss against a value computed by hand (scalar C++) on a tiny batch.
#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.h"
#include "models/model_test_helpers.h"
#include "models/registry.h"
#include "models/salt_wrapper.h"
#include "models/tasks/classification_task.h"
#include "models/tasks/regression_task.h"
#include "models/tasks/vertex_assignment.h"
#include "models/tasks/vertexing_task.h"

using namespace salt::models;

namespace {

using salt::models::testing::identity_dense;
using salt::models::testing::make_identity;

double log_softmax_at(const std::vector<double>& z, int c) {
  double m = *std::max_element(z.begin(), z.end()), s = 0;
  for (double v : z) s += std::exp(v - m);
  return z[c] - m - std::log(s);
}

double bce(double z, double t) { return std::max(z, 0.0) - z * t + std::log1p(std::exp(-std::abs(z))); }

}  // namespace

TEST(Loss, CrossEntropyWithClassWeightsAndIgnoredSlots) {
  auto loss = LossOptions(LossKind::CrossEntropy).weight(std::vector<float>{1.0f, 2.0f, 3.0f});
  ClassificationTaskImpl task(TaskOptions("track_origin", "tracks", identity_dense(3), loss).weight(0.5),
                              ClassificationOptions("lab").class_names({"a", "b", "c"}));
  make_identity(task);
  // One jet, 4 slots: labels 0, 2, -2 (ignored), 1 (padded slot, ignored).
  std::vector<std::vector<double>> z = {{1.0, 0.5, -1.0}, {0.2, 0.1, 2.0}, {3.0, 0.0, 0.0}, {0.0, 9.0, 0.0}};
  auto x = torch::tensor({1.0, 0.5, -1.0, 0.2, 0.1, 2.0, 3.0, 0.0, 0.0, 0.0, 9.0, 0.0}).view({1, 4, 3}).to(torch::kFloat);
  auto pad = torch::tensor({false, false, false, true}).view({1, 4});
  Labels labels;
  labels["tracks"]["lab"] = torch::tensor({0, 2, -2, 1}, torch::kLong).view({1, 4});
  auto out = task.forward(x, pad, {}, &labels, {});
  // Weighted mean over the valid slots: (w0 * -log p0(z0) + w2 * -log p2(z1)) / (w0 + w2), times weight 0.5.
  const double expected = 0.5 * (1.0 * -log_softmax_at(z[0], 0) + 3.0 * -log_softmax_at(z[1], 2)) / (1.0 + 3.0);
  EXPECT_NEAR(out.loss.item<double>(), expected, 1e-6);

  // Nothing valid: 0, not NaN.
  labels["tracks"]["lab"] = torch::full({1, 4}, -2, torch::kLong);
  EXPECT_EQ(task.forward(x, pad, {}, &labels, {}).loss.item<float>(), 0.0f);
  // A label outside the classes names the task.
  labels["tracks"]["lab"] = torch::tensor({0, 5, 1, 1}, torch::kLong).view({1, 4});
  EXPECT_THROW(task.forward(x, pad, {}, &labels, {}), salt::InputError);
}

TEST(Loss, LabelMapRemapsJetLabels) {
  ClassificationTaskImpl task(TaskOptions("jets_classification", "jets", identity_dense(3), LossOptions()),
                              ClassificationOptions("HadronConeExclTruthLabelID")
                                  .class_names({"ujets", "cjets", "bjets"})
                                  .label_map(LabelMap{{0, 0}, {4, 1}, {5, 2}}));
  auto y = task.prepare_labels(torch::tensor({5, 0, 4, -2}, torch::kLong), {});
  EXPECT_TRUE(torch::equal(y, torch::tensor({2, 0, 1, -1}, torch::kLong)));
  make_identity(task);
  std::vector<std::vector<double>> z = {{0.1, 0.2, 0.3}, {1.0, -1.0, 0.0}};
  auto x = torch::tensor({0.1, 0.2, 0.3, 1.0, -1.0, 0.0}).view({2, 3}).to(torch::kFloat);
  Labels labels;
  labels["jets"]["HadronConeExclTruthLabelID"] = torch::tensor({5, 4}, torch::kLong);
  const double expected = -(log_softmax_at(z[0], 2) + log_softmax_at(z[1], 1)) / 2;
  EXPECT_NEAR(task.forward(x, {}, {}, &labels, {}).loss.item<double>(), expected, 1e-6);
}

TEST(Loss, VertexingWeightsAndNormalisation) {
  // salt's per-track s and the int bitwise AND: HF&HF = 1, HF&Fake = 1, Fake&Fake = -1, other = 0.
  EXPECT_EQ(1 & 1, 1);
  EXPECT_EQ(1 & -1, 1);
  EXPECT_EQ(-1 & -1, -1);
  EXPECT_EQ(0 & -1, 0);

  VertexingTaskImpl task(TaskOptions("track_vertexing", "tracks", DenseOptions(4).output_size(1),
                                     LossOptions(LossKind::BCEWithLogits).reduction("none"))
                             .weight(1.5),
                         "ftagTruthVertexIndex");
  EXPECT_EQ(task.origin_label(), "ftagTruthOriginLabel");
  // 5 valid tracks + 1 padded. Origins: FromB, FromC, Fake, Fake, Primary, (padded FromB).
  const std::vector<int64_t> vertex = {0, 0, -1, -1, 2, 0}, origin = {3, 5, 1, 1, 2, 3};
  const int n = 5;
  auto pad = torch::tensor({false, false, false, false, false, true}).view({1, 6});
  auto adjacency = edge_adjacency(pad, 1, 6);
  const int64_t num_edges = n * (n - 1);
  ASSERT_EQ(adjacency.sum().item<int64_t>(), num_edges);
  auto logits = torch::linspace(-2.0, 2.5, num_edges).view({num_edges, 1});

  auto s = [&](int i) { return (origin[i] >= 3 && origin[i] <= 5) ? 1 : (origin[i] == 1 ? -1 : 0); };
  double sum = 0;
  int positives = 0, e = 0;
  std::map<std::pair<int, int>, int> weights;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      const double t = (vertex[i] == vertex[j] && vertex[i] >= 0 && vertex[j] >= 0) ? 1.0 : 0.0;
      const int w = 1 + (s(i) & s(j));
      weights[{i, j}] = w;
      positives += static_cast<int>(t);
      sum += w * bce(logits[e++][0].item<double>(), t);
    }
  EXPECT_EQ(weights[std::make_pair(0, 1)], 2);  // FromB & FromC
  EXPECT_EQ(weights[std::make_pair(0, 2)], 2);  // FromB & Fake
  EXPECT_EQ(weights[std::make_pair(2, 3)], 0);  // Fake & Fake
  EXPECT_EQ(weights[std::make_pair(4, 0)], 1);  // Primary & FromB
  EXPECT_EQ(positives, 2);                      // (0,1) and (1,0); -1 == -1 is no match

  auto v = torch::tensor(vertex, torch::kLong).view({1, 6}), o = torch::tensor(origin, torch::kLong).view({1, 6});
  EXPECT_NEAR(task.edge_loss(logits, v, o, adjacency).item<double>(), sum / positives, 1e-5);

  // No positive edge: salt divides by zero; we divide by 1.
  auto lonely = torch::tensor({0, 1, 2, 3, 4, 0}, torch::kLong).view({1, 6});
  auto l = task.edge_loss(logits, lonely, o, adjacency);
  EXPECT_TRUE(torch::isfinite(l).item<bool>());
  EXPECT_GT(l.item<double>(), 0.0);

  // Through forward: the task weight multiplies the loss.
  Labels labels;
  labels["tracks"]["ftagTruthVertexIndex"] = v;
  labels["tracks"]["ftagTruthOriginLabel"] = o;
  auto x = torch::randn({1, 6, 2});
  auto out = task.forward(x, pad, {}, &labels, {});
  EXPECT_EQ(out.preds.size(0), num_edges);
  EXPECT_NEAR(out.loss.item<double>(), 1.5 * task.edge_loss(out.preds, v, o, adjacency).item<double>(), 1e-5);
}

TEST(Loss, VertexingEdgeFeaturesAreContextThenPair) {
  // Dense(2 x 1 features, context 1 -> 1) with weights (100, 10, 1): logit = 100 c + 10 x_i + x_j.
  VertexingTaskImpl task(TaskOptions("v", "tracks", DenseOptions(2).context_size(1).hidden_layers(std::vector<int64_t>{})
                                                        .output_size(1),
                                     LossOptions(LossKind::BCEWithLogits)),
                         "ftagTruthVertexIndex");
  {
    torch::NoGradGuard ng;
    auto params = task.net->named_parameters();
    params["net.0.weight"].copy_(torch::tensor({{100.0f, 10.0f, 1.0f}}));
    params["net.0.bias"].zero_();
  }
  auto x = torch::tensor({1.0f, 2.0f, 3.0f, 0.0f}).view({1, 4, 1});
  auto pad = torch::tensor({false, true, false, false}).view({1, 4});  // non-prefix padding
  auto out = task.forward(x, pad, torch::tensor({{7.0f}}), nullptr, {});
  // Valid slots 0, 2, 3 (x = 1, 3, 0); edges (0,2) (0,3) (2,0) (2,3) (3,0) (3,2).
  auto expected = torch::tensor({710.0f + 3, 710.0f + 0, 730.0f + 1, 730.0f + 0, 700.0f + 1, 700.0f + 3}).view({6, 1});
  EXPECT_TRUE(torch::allclose(out.preds, expected));
}

TEST(Loss, VertexAssignmentFromEdges) {
  // 4 valid tracks at slots 0, 2, 3, 4 (slot 1 padded): edges in (i, j) order over valid ones.
  auto pad = torch::tensor({false, true, false, false, false}).view({1, 5});
  const int n = 4;
  std::vector<float> logits(n * (n - 1), -5.0f);
  auto edge = [&](int i, int j) { return i * (n - 1) + (j < i ? j : j - 1); };
  logits[edge(0, 2)] = 4.0f;   // strong one way ...
  logits[edge(2, 0)] = -1.0f;  // ... weak the other: mean > 0 joins them
  logits[edge(1, 3)] = 1.0f;
  logits[edge(3, 1)] = -3.0f;  // mean < 0: not joined
  auto out = vertex_assignment(torch::tensor(logits).view({-1, 1}), pad);
  // Indices count valid tracks: valid #0 and #2 share a vertex (0); #1 and #3 are alone.
  EXPECT_TRUE(torch::equal(out, torch::tensor({0, -1, 1, 0, 3}, torch::kLong).view({1, 5})));
}

// salt's nan_loss (the default): NaN targets count as 0 and padded slots as 0 in
// the mean over every entry.
TEST(Loss, RegressionAveragesAsSaltsNanLoss) {
  auto options = [] {
    return RegressionOptions().targets({"t1", "t2"}).norm_mean(std::vector<float>{1.0f, 0.0f}).norm_std(
        std::vector<float>{2.0f, 1.0f});
  };
  RegressionTaskImpl task(TaskOptions("reg", "jets", identity_dense(2), LossOptions(LossKind::MSE)), options());
  RegressionTaskImpl valid_only(TaskOptions("reg", "jets", identity_dense(2), LossOptions(LossKind::MSE)),
                                options().average_over("valid"));
  make_identity(task);
  make_identity(valid_only);
  auto x = torch::tensor({0.5f, 1.0f, -1.0f, 2.0f, 0.0f, 0.0f}).view({3, 2});
  Labels labels;
  labels["jets"]["t1"] = torch::tensor({1.0f, NAN, 3.0f});
  labels["jets"]["t2"] = torch::tensor({0.5f, 2.0f, NAN});
  // Scaled targets (t1 - 1) / 2 and t2: [0, 0.5], [NaN, 2], [1, NaN].
  // salt: NaN -> 0, the mean over all 6 entries.
  const double salt = (0.25 + 0.25 + 1.0 + 0.0 + 1.0 + 0.0) / 6;
  EXPECT_NEAR(task.forward(x, {}, {}, &labels, {}).loss.item<double>(), salt, 1e-6);
  // valid: the 4 finite targets only.
  const double valid = (0.25 + 0.25 + 0.0 + 1.0) / 4;
  EXPECT_NEAR(valid_only.forward(x, {}, {}, &labels, {}).loss.item<double>(), valid, 1e-6);

  // Inference undoes the scaling.
  auto cols = task.predict(x, {}, nullptr, "GN2");
  EXPECT_EQ(cols.names, (std::vector<std::string>{"GN2_t1", "GN2_t2"}));
  EXPECT_NEAR(cols.values[0][0].item<float>(), 0.5f * 2 + 1, 1e-6);

  // Constituent level: a padded slot counts as |0 - 0| in salt's mean, is left out
  // of valid's, and is NaN in the output.
  auto l1 = [](const std::string& over) {
    auto t = std::make_shared<RegressionTaskImpl>(TaskOptions("treg", "tracks", identity_dense(1), LossOptions(LossKind::L1)),
                                                  RegressionOptions().targets({"d"}).average_over(over));
    make_identity(*t);
    return t;
  };
  auto tx = torch::tensor({1.0f, 2.0f, 5.0f}).view({1, 3, 1});
  auto pad = torch::tensor({false, false, true}).view({1, 3});
  Labels tl;
  tl["tracks"]["d"] = torch::tensor({0.0f, 4.0f, 100.0f}).view({1, 3});
  EXPECT_NEAR(l1("all")->forward(tx, pad, {}, &tl, {}).loss.item<double>(), (1.0 + 2.0 + 0.0) / 3, 1e-6);
  EXPECT_NEAR(l1("valid")->forward(tx, pad, {}, &tl, {}).loss.item<double>(), (1.0 + 2.0) / 2, 1e-6);
  EXPECT_TRUE(std::isnan(l1("all")->predict(tx, pad, nullptr, "m").values[0][2][0].item<float>()));

  // The gradient does not reach a padded slot's prediction.
  auto gx = tx.clone().requires_grad_(true);
  l1("all")->forward(gx, pad, {}, &tl, {}).loss.backward();
  EXPECT_EQ(gx.grad()[0][2][0].item<float>(), 0.0f);
  EXPECT_NEAR(gx.grad()[0][0][0].item<float>(), 1.0 / 3, 1e-6);
}

// salt zeroes a padded slot's variance too, and GaussianNLLLoss clamps it to eps:
// each padded entry adds 0.5 * log(eps) to salt's mean.
TEST(Loss, GaussianRegressionCountsPaddedSlotsAsSaltDoes) {
  RegressionTaskImpl task(TaskOptions("g", "tracks", identity_dense(2), LossOptions(LossKind::GaussianNLL)),
                          RegressionOptions().targets({"d"}).gaussian(true));
  make_identity(task);
  auto x = torch::tensor({1.0f, 0.3f, 7.0f, -2.0f}).view({1, 2, 2});  // slot 1 padded
  auto pad = torch::tensor({false, true}).view({1, 2});
  Labels labels;
  labels["tracks"]["d"] = torch::tensor({2.5f, 9.0f}).view({1, 2});
  const double var = std::log1p(std::exp(0.3));
  const double real = 0.5 * (std::log(var) + std::pow(1.0 - 2.5, 2) / var);
  EXPECT_NEAR(task.forward(x, pad, {}, &labels, {}).loss.item<double>(), (real + 0.5 * std::log(1e-6)) / 2, 1e-5);
}

TEST(Loss, GaussianRegression) {
  RegressionTaskImpl task(TaskOptions("pt", "jets", identity_dense(2), LossOptions(LossKind::GaussianNLL)),
                          RegressionOptions().targets({"pt"}).gaussian(true));
  make_identity(task);
  auto x = torch::tensor({1.0f, 0.3f}).view({1, 2});
  Labels labels;
  labels["jets"]["pt"] = torch::tensor({2.5f});
  const double var = std::log1p(std::exp(0.3));  // softplus
  const double expected = 0.5 * (std::log(var) + std::pow(1.0 - 2.5, 2) / var);
  EXPECT_NEAR(task.forward(x, {}, {}, &labels, {}).loss.item<double>(), expected, 1e-6);
  auto cols = task.predict(x, {}, nullptr, "GN2");
  EXPECT_EQ(cols.names, (std::vector<std::string>{"pt_pt", "pt_pt_stddev"}));
  EXPECT_NEAR(cols.values[0][1].item<float>(), std::sqrt(var), 1e-6);
}

TEST(Loss, TotalLossModes) {
  auto net = InitNet(InitNetOptions("jets", "jets", DenseOptions(2).output_size(2)).attach_global(false));
  auto make_tasks = [&](double w2) {
    std::vector<std::shared_ptr<TaskImpl>> tasks;
    tasks.push_back(std::make_shared<RegressionTaskImpl>(TaskOptions("a", "jets", DenseOptions(2).output_size(1), LossOptions(LossKind::MSE)),
                                                         RegressionOptions().targets({"x"})));
    tasks.push_back(std::make_shared<RegressionTaskImpl>(
        TaskOptions("b", "jets", DenseOptions(2).output_size(1), LossOptions(LossKind::MSE)).weight(w2),
        RegressionOptions().targets({"y"})));
    return SaltModel("jets", std::vector<InitNet>{net}, Transformer(nullptr), PoolNet(nullptr), tasks);
  };
  InputNorm norm(std::map<std::string, NormStats>{{"jets", {{0, 0}, {1, 1}}}});
  SaltWrapper wsum(make_tasks(2.0), norm, "wsum");
  SaltWrapper gls(make_tasks(1.0), norm, "GLS");
  std::map<std::string, torch::Tensor> losses = {{"a", torch::tensor(2.0)}, {"b", torch::tensor(8.0)}};
  EXPECT_NEAR(wsum->total_loss(losses).item<double>(), 10.0, 1e-9);
  EXPECT_NEAR(gls->total_loss(losses).item<double>(), 4.0, 1e-6);  // (2 * 8)^(1/2)
  try {
    SaltWrapper bad(make_tasks(2.0), norm, "GLS");
    FAIL() << "GLS with a task weight of 2 must be refused";
  } catch (const salt::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("GLS"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'b'"), std::string::npos);
  }
  EXPECT_THROW(SaltWrapper(make_tasks(1.0), norm, "mean"), salt::UsageError);

  // End to end: the total of a forward pass is the geometric mean of the task losses.
  Labels labels;
  labels["jets"]["x"] = torch::tensor({1.0f, 2.0f});
  labels["jets"]["y"] = torch::tensor({0.0f, -1.0f});
  auto out = gls->forward(TensorMap{{"jets", torch::randn({2, 2})}}, {}, &labels);
  EXPECT_NEAR(out.loss.item<double>(), std::sqrt(out.losses["a"].item<double>() * out.losses["b"].item<double>()), 1e-6);
}

// torch's deprecated size_average / reduce, as jsonargparse writes them into salt's
// config.yaml (null), and as torch's _Reduction.legacy_get_string maps them when set.
TEST(Loss, LegacySizeAverageAndReduceDecideTheReductionAsTorchDoes) {
  auto reduction_of = [](const std::string& class_path, const std::string& init_args) {
    salt::config::ComponentNode node;
    node.class_path = class_path;
    node.init_args.reset(YAML::Load(init_args));
    return build_component<LossOptions>(node, BuildContext{}).reduction();
  };
  const std::string ce = "torch.nn.CrossEntropyLoss";
  EXPECT_EQ(reduction_of(ce, "{size_average: null, reduce: null, reduction: sum}"), "sum");  // salt's config.yaml
  EXPECT_EQ(reduction_of(ce, "{size_average: false}"), "sum");
  EXPECT_EQ(reduction_of(ce, "{size_average: true, reduction: none}"), "mean");  // legacy wins, as in torch
  EXPECT_EQ(reduction_of(ce, "{reduce: false, size_average: true}"), "none");
  EXPECT_EQ(reduction_of("torch.nn.BCEWithLogitsLoss", "{reduce: true, size_average: false}"), "sum");
  EXPECT_EQ(reduction_of("torch.nn.MSELoss", "{reduce: false}"), "none");
  EXPECT_EQ(reduction_of("torch.nn.L1Loss", "{}"), "mean");
}
