// MaskFormerLoss after matching against Python's torch: queries put in target
// order, weighted cross entropy over every slot (null class at null_class_weight),
// mask losses over the real objects, each times its loss weight; salt's class
// weight rules.
#include "models/maskformer/maskformer_loss.h"

#include <gtest/gtest.h>

#include <sstream>

#include "support/test_support.h"

namespace salt::models {
namespace {

const char* kReference = R"(
import numpy as np, torch
import torch.nn.functional as F
torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(11)
B, N, M, L, C = 3, 6, 4, 5, 3
cls = torch.tensor(rng.normal(size=(B, N, C + 1)))
masks = torch.tensor(rng.normal(scale=2.0, size=(B, N, L)))
assign = torch.tensor([[5, 0, 2, 1], [3, 4, 0, 1], [0, 1, 2, 3]])
tclass = torch.tensor([[0, 2, 3, 3], [1, 3, 3, 3], [2, 0, 1, 3]])
tmask = torch.tensor(rng.integers(0, 2, size=(B, M, L)), dtype=torch.float64)
c = torch.stack([cls[b, assign[b]] for b in range(B)])
m = torch.stack([masks[b, assign[b]] for b in range(B)])
ce = F.cross_entropy(c.flatten(0, 1), tclass.flatten(), weight=torch.tensor([1.0, 1.0, 1.0, 0.5]))
weighted = F.cross_entropy(c.flatten(0, 1), tclass.flatten(), weight=torch.tensor([2.0, 1.0, 0.5, 0.25]))
valid = tclass != C
x, y = m[valid], tmask[valid]
s = torch.sigmoid(x)
dice = (1 - (2 * (s * y).sum(-1) + 1) / (s.sum(-1) + y.sum(-1) + 1)).mean()
bce = F.binary_cross_entropy_with_logits(x, y, reduction="none")
p_t = s * y + (1 - s) * (1 - y)
focal = (bce * (1 - p_t) ** 2).mean(1).mean()
vals = [cls, masks, tmask, torch.tensor([ce * 1.5, dice * 2.0, focal * 10.0, bce.mean(1).mean() * 0.5, weighted])]
for v in vals:
    print(" ".join(repr(float(a)) for a in v.flatten()))
)";

std::vector<std::vector<double>> lines_of(const std::string& text) {
  std::vector<std::vector<double>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    out.emplace_back();
    for (double v; words >> v;) out.back().push_back(v);
  }
  return out;
}

TEST(MaskFormerLoss, EqualsTorchOnMatchedQueries) {
  const auto py = testing::run_python(kReference);
  ASSERT_EQ(py.exit_code, 0) << py.err;
  const auto v = lines_of(py.out);
  ASSERT_EQ(v.size(), 4u);
  const auto cls = torch::tensor(v[0], torch::kDouble).reshape({3, 6, 4});
  const auto masks = torch::tensor(v[1], torch::kDouble).reshape({3, 6, 5});
  const auto tmask = torch::tensor(v[2], torch::kDouble).reshape({3, 4, 5});
  const auto assign = torch::tensor({5, 0, 2, 1, 3, 4, 0, 1, 0, 1, 2, 3}, torch::kInt64).reshape({3, 4});
  const auto tclass = torch::tensor({0, 2, 3, 3, 1, 3, 3, 3, 2, 0, 1, 3}, torch::kInt64).reshape({3, 4});
  MaskFormerLossOptions o;
  o.num_classes = 3;
  o.loss_weights = {{"object_class_ce", 1.5}, {"mask_dice", 2.0}, {"mask_focal", 10.0}, {"mask_ce", 0.5}};
  const auto c = in_target_order(cls, assign), m = in_target_order(masks, assign);
  EXPECT_TRUE(torch::equal(c[0][0], cls[0][5]));
  auto losses = maskformer_losses(c, m, tclass, tmask, o, "_layer0");
  const auto& want = v[3];
  EXPECT_NEAR(losses.at("object_class_ce_layer0").item<double>(), want[0], 1e-6);  // float class weights
  EXPECT_NEAR(losses.at("mask_dice_layer0").item<double>(), want[1], 1e-12);
  EXPECT_NEAR(losses.at("mask_focal_layer0").item<double>(), want[2], 1e-12);
  EXPECT_NEAR(losses.at("mask_ce_layer0").item<double>(), want[3], 1e-12);
  // class_weights with the null class given explicitly.
  o.class_weights = std::vector<double>{2.0, 1.0, 0.5, 0.25};
  o.loss_weights = {{"object_class_ce", 1.0}};
  losses = maskformer_losses(c, m, tclass, tmask, o);
  EXPECT_NEAR(losses.at("object_class_ce").item<double>(), want[4], 1e-6);
  EXPECT_EQ(losses.size(), 1u);
}

TEST(MaskFormerLoss, ClassWeightsFollowSaltsRules) {
  MaskFormerLossOptions o;
  o.num_classes = 3;
  EXPECT_TRUE(torch::equal(class_weight_vector(o), torch::tensor({1.0f, 1.0f, 1.0f, 0.5f})));
  o.class_weights = std::vector<double>{1, 2, 3};
  EXPECT_TRUE(torch::equal(class_weight_vector(o), torch::tensor({1.0f, 2.0f, 3.0f, 0.5f})));
  o.class_weights = std::vector<double>{1, 2};
  try {
    class_weight_vector(o);
    FAIL() << "2 weights for 3 classes accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "MaskFormerLoss: class_weights has 2 entries, expected 3 or 4");
  }
  o.num_classes = 1;  // one class: the BCE's pos_weight is the null class weight
  EXPECT_TRUE(torch::equal(class_weight_vector(o), torch::tensor({0.5f})));
}

}  // namespace
}  // namespace salt::models
