// MaskFormer's loss terms and Hungarian matching against an independent
// reference: explicit per-pair loops in Python's torch for the costs and losses,
// scipy's linear_sum_assignment for the matching, on random tiny jets; and salt's
// class-cost rule in salt's own lines.
#include "models/maskformer/mask_matching.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace salt::models {
namespace {

constexpr int64_t B = 4, N = 5, M = 5, L = 7, C = 3, R = 2;

const char* kReference = R"(
import numpy as np, torch
from scipy.optimize import linear_sum_assignment
torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(7)
B, N, M, L, C, R = 4, 5, 5, 7, 3, 2
counts = [2, 0, 5, 3]                                   # real objects per jet, first in the slots
probs = torch.softmax(torch.tensor(rng.normal(size=(B, N, C + 1))), -1)
logits = torch.tensor(rng.normal(scale=2.0, size=(B, N, L)))
tclass = torch.full((B, M), C, dtype=torch.long)
tmask = torch.zeros(B, M, L)
reg = torch.tensor(rng.normal(size=(B, N, R)))
treg = torch.tensor(rng.normal(size=(B, M, R)))
for b, k in enumerate(counts):
    tclass[b, :k] = torch.tensor(rng.integers(0, C, size=k))
    tmask[b, :k] = torch.tensor(rng.integers(0, 2, size=(k, L)), dtype=torch.float64)

def bce(x, y):
    return -(y * torch.log(torch.sigmoid(x)) + (1 - y) * torch.log(1 - torch.sigmoid(x)))

def focal(x, y, alpha=-1.0, gamma=2.0):
    s = torch.sigmoid(x)
    p_t = s * y + (1 - s) * (1 - y)
    f = bce(x, y) * (1 - p_t) ** gamma
    if alpha >= 0:
        f = (alpha * y + (1 - alpha) * (1 - y)) * f
    return f.mean()

def dice(x, y):
    s = torch.sigmoid(x)
    return 1 - (2 * (s * y).sum() + 1) / (s.sum() + y.sum() + 1)

w = dict(cls=1.0, dice=2.0, ce=0.5, focal=1.5, reg=0.7)
cost = torch.zeros(B, N, M)
for b in range(B):
    for n in range(N):
        for m in range(M):
            real = tclass[b, m] != C
            classed = real and m < C                    # salt: the class term on the first C slots only
            c = -w["cls"] * probs[b, n, tclass[b, m]] * classed
            c += w["dice"] * dice(logits[b, n], tmask[b, m])
            c += w["ce"] * bce(logits[b, n], tmask[b, m]).mean()
            c += w["focal"] * focal(logits[b, n], tmask[b, m])
            c += w["reg"] * (reg[b, n] - treg[b, m] * real).abs().mean()
            cost[b, n, m] = c
assign = torch.zeros(B, M, dtype=torch.long)
for b, k in enumerate(counts):
    rows, cols = linear_sum_assignment(cost[b, :, :k].T.numpy())
    taken = list(cols)
    free = [n for n in range(N) if n not in taken]
    assign[b] = torch.tensor(list(cols) + free[: M - k])
# Losses over the real targets and the queries matched to them.
x = torch.cat([logits[b, assign[b, :k]] for b, k in enumerate(counts)])
y = torch.cat([tmask[b, :k] for b, k in enumerate(counts)])
K = len(x)
losses = [sum(dice(x[i], y[i]) for i in range(K)) / K,
          sum(bce(x[i], y[i]).mean() for i in range(K)) / K,
          sum(focal(x[i], y[i]) for i in range(K)) / K,
          sum(focal(x[i], y[i], alpha=0.25, gamma=3.0) for i in range(K)) / K]
def out(name, t):
    print(name, " ".join(repr(float(v)) for v in torch.as_tensor(t).flatten()))
for name, t in [("probs", probs), ("logits", logits), ("tclass", tclass), ("tmask", tmask), ("reg", reg),
                ("treg", treg), ("cost", cost), ("assign", assign), ("losses", torch.stack(losses))]:
    out(name, t)
)";

std::map<std::string, std::vector<double>> parse(const std::string& text) {
  std::map<std::string, std::vector<double>> values;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    for (double v; words >> v;) values[name].push_back(v);
  }
  return values;
}

torch::Tensor tensor(const std::vector<double>& v, std::vector<int64_t> shape) {
  return torch::tensor(v, torch::kDouble).reshape(shape);
}

TEST(MaskMatching, CostsMatchingAndLossesEqualAnIndependentReference) {
  const auto py = testing::run_python(kReference);
  ASSERT_EQ(py.exit_code, 0) << py.err;
  auto v = parse(py.out);
  MatchInputs in;
  in.class_probs = tensor(v["probs"], {B, N, C + 1});
  in.mask_logits = tensor(v["logits"], {B, N, L});
  in.target_class = tensor(v["tclass"], {B, M}).to(torch::kInt64);
  in.target_masks = tensor(v["tmask"], {B, M, L});
  in.regression = tensor(v["reg"], {B, N, R});
  in.target_regression = tensor(v["treg"], {B, M, R});
  MatchWeights w;
  w.object_class_ce = 1.0;
  w.mask_dice = 2.0;
  w.mask_ce = 0.5;
  w.mask_focal = 1.5;
  w.regression = 0.7;

  const auto cost = match_cost(in, w);
  EXPECT_TRUE(torch::allclose(cost, tensor(v["cost"], {B, N, M}), 1e-10, 1e-12))
      << (cost - tensor(v["cost"], {B, N, M})).abs().max().item<double>();
  const auto assign = hungarian_match(in, w);
  EXPECT_TRUE(torch::equal(assign, tensor(v["assign"], {B, M}).to(torch::kInt64))) << assign;

  // The mask losses on the real targets and their matched queries.
  std::vector<torch::Tensor> x, y;
  const std::vector<int64_t> counts{2, 0, 5, 3};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t m = 0; m < counts[static_cast<size_t>(b)]; ++m) {
      x.push_back(in.mask_logits[b][assign[b][m].item<int64_t>()]);
      y.push_back(in.target_masks[b][m]);
    }
  const auto xs = torch::stack(x), ys = torch::stack(y);
  const auto& want = v["losses"];
  ASSERT_EQ(want.size(), 4u);
  EXPECT_NEAR(mask_dice_loss(xs, ys).item<double>(), want[0], 1e-12);
  EXPECT_NEAR(mask_ce_loss(xs, ys).item<double>(), want[1], 1e-12);
  EXPECT_NEAR(mask_focal_loss(xs, ys).item<double>(), want[2], 1e-12);
  EXPECT_NEAR(mask_focal_loss(xs, ys, 0.25, 3.0).item<double>(), want[3], 1e-12);
}

// salt's matcher gives the class cost only to the first num_classes target slots
// (matcher.py: obj_class_tgt[:, : self.num_classes]). Its lines, vectorised as salt
// writes them, on two jets with C = 2 classes: jet 0 has 5 true objects and is matched
// differently than with the class cost on every true object (the script checks that it
// is), jet 1 has 2 and is matched the same either way.
const char* kSaltsClassRule = R"(
import numpy as np, torch
from scipy.optimize import linear_sum_assignment
torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(1)
B, N, L, C = 2, 5, 6, 2
counts = [5, 2]
probs = torch.softmax(torch.tensor(rng.normal(scale=2.0, size=(B, N, C + 1))), -1)
logits = torch.tensor(rng.normal(scale=2.0, size=(B, N, L)))
tclass = torch.full((B, N), C, dtype=torch.long)
tmask = torch.zeros(B, N, L)
for b, k in enumerate(counts):
    tclass[b, :k] = torch.tensor(rng.integers(0, C, size=k))
    tmask[b, :k] = torch.tensor(rng.integers(0, 2, size=(k, L)), dtype=torch.float64)
s = logits.sigmoid()                                    # salt's batch_dice_cost
dice = 1 - (2 * torch.einsum("bnc,bmc->bnm", s, tmask) + 1) / (s.sum(-1).unsqueeze(2) + tmask.sum(-1).unsqueeze(1) + 1)
# salt's get_batch_cost, its class term
obj_class_tgt = tclass[:, :C].unsqueeze(1).expand(-1, N, -1)
valid_obj_mask = obj_class_tgt != C
output = torch.gather(probs, 2, obj_class_tgt * valid_obj_mask) * valid_obj_mask
obj_class_cost = torch.zeros((B, N, N))
obj_class_cost[:, :, :C] = -output
cost = 1.0 * obj_class_cost + 0.5 * dice
# the other rule: the class term on every true object
valid = tclass != C
every = -probs.gather(2, (tclass * valid).unsqueeze(1).expand(-1, N, -1)) * valid.unsqueeze(1) + 0.5 * dice
def match(c):
    out = []
    for b, k in enumerate(counts):
        cols = list(linear_sum_assignment(c[b, :, :k].T.numpy())[1])
        out.append(cols + [n for n in range(N) if n not in cols])   # salt's fill, ascending
    return out
assign, other = match(cost), match(every)
assert assign[0] != other[0] and assign[1] == other[1], (assign, other)
def out(name, t):
    print(name, " ".join(repr(float(v)) for v in torch.as_tensor(t).flatten()))
for name, t in [("probs", probs), ("logits", logits), ("tclass", tclass), ("tmask", tmask), ("cost", cost),
                ("assign", assign)]:
    out(name, t)
)";

TEST(MaskMatching, ClassCostOnTheFirstNumClassesSlotsAsSalt) {
  const auto py = testing::run_python(kSaltsClassRule);
  ASSERT_EQ(py.exit_code, 0) << py.err;
  auto v = parse(py.out);
  constexpr int64_t b = 2, n = 5, l = 6, c = 2;
  MatchInputs in;
  in.class_probs = tensor(v["probs"], {b, n, c + 1});
  in.mask_logits = tensor(v["logits"], {b, n, l});
  in.target_class = tensor(v["tclass"], {b, n}).to(torch::kInt64);
  in.target_masks = tensor(v["tmask"], {b, n, l});
  MatchWeights w;
  w.object_class_ce = 1.0;
  w.mask_dice = 0.5;

  // The columns of true objects (salt sets the others to NaN and leaves them out).
  const auto want_cost = tensor(v["cost"], {b, n, n});
  const auto cost = match_cost(in, w);
  const auto real = (in.target_class != c).unsqueeze(1).expand_as(cost);
  EXPECT_TRUE(torch::allclose(cost.masked_select(real), want_cost.masked_select(real), 1e-12, 1e-12))
      << cost << want_cost;
  const auto assign = hungarian_match(in, w);
  EXPECT_TRUE(torch::equal(assign, tensor(v["assign"], {b, n}).to(torch::kInt64)))
      << assign << tensor(v["assign"], {b, n});
}

TEST(MaskMatching, MoreTargetSlotsThanQueriesIsRefused) {
  MatchInputs in;
  in.class_probs = torch::full({1, 2, 3}, 1.0 / 3, torch::kDouble);
  in.mask_logits = torch::zeros({1, 2, 4}, torch::kDouble);
  in.target_class = torch::full({1, 3}, 2, torch::kInt64);
  in.target_masks = torch::zeros({1, 3, 4}, torch::kDouble);
  EXPECT_THROW(hungarian_match(in, MatchWeights{}), std::invalid_argument);
}

}  // namespace
}  // namespace salt::models
