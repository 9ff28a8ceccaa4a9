// MaskformerMetrics against salt's formulas (maskformer_metrics.py, mask_utils.py's
// sigmoid_mask / sanitise_mask / reco_metrics) written in Python, on random
// predictions over two batches counted together.
#include "models/maskformer/maskformer_metrics.h"

#include <gtest/gtest.h>

#include <sstream>

#include "support/test_support.h"

namespace salt::models {
namespace {

const char* kReference = R"(
import numpy as np, torch
rng = np.random.default_rng(5)
B, M, L, C = 6, 4, 7, 3
batches = []
for _ in range(2):
    logits = torch.tensor(rng.normal(size=(B, M, C)) * 2)
    masks = torch.tensor(rng.normal(size=(B, M, L)) * 2)
    tclass = torch.tensor(rng.choice([0, 1, 2, 2], size=(B, M)))
    tmask = torch.tensor(rng.integers(0, 2, size=(B, M, L)).astype(bool)) & (tclass != 2).unsqueeze(-1)
    pad = torch.tensor(rng.random((B, L)) < 0.3)
    reg = torch.tensor(rng.normal(size=(B, M, 2)))
    treg = torch.tensor(rng.normal(size=(B, M, 2)))
    batches.append((logits, masks, tclass, tmask, pad, reg, treg))
for b in batches:
    for t in b:
        print(" ".join(repr(float(v)) for v in t.flatten()))
cat = [torch.cat(x) for x in zip(*batches)]
logits, masks, tclass, tmask, pad, reg, treg = cat
pred = logits.argmax(-1)
out = {}
out["class_exact_match"] = (pred == tclass).all(1).double().mean()
out["class_accuracy_micro"] = (pred == tclass).double().mean()
for i, k in enumerate(["b", "c"]):
    tp = ((pred == i) & (tclass == i)).sum()
    out[k + "_eff"] = tp / (tclass == i).sum()
    out[k + "_pur"] = tp / (pred == i).sum()
tp = ((pred != 2) & (tclass != 2)).sum()
out["notnull_eff"] = tp / (tclass != 2).sum()
out["notnull_pur"] = tp / (pred != 2).sum()
m = masks.sigmoid() > 0.5
m.transpose(1, 2)[pad] = False
m[logits.argmax(-1) == C - 1] = False
for name, (r, p) in {"perfect": (1, 1), "loose": (0.5, 0.5)}.items():
    pred_valid = m.sum(-1) > 0
    eff = (m & tmask).sum(-1) / tmask.sum(-1)
    pur = (m & tmask).sum(-1) / m.sum(-1)
    ok = (eff >= r) & (pur >= p)
    out[f"query_{name}_match_eff"] = (pred_valid & ok)[tmask.sum(-1) > 0].double().mean()
    out[f"query_{name}_match_fake"] = (pred_valid & ~ok)[pred_valid].double().mean()
real = tclass != 2
for i, t in enumerate(["pt", "Lxy"]):
    out[f"query_{t}_mae"] = (reg[..., i][real] - treg[..., i][real]).abs().mean()
for k, v in out.items():
    print(k, repr(float(v)))
)";

std::vector<double> numbers(const std::string& line) {
  std::istringstream in(line);
  std::vector<double> v;
  for (double d; in >> d;) v.push_back(d);
  return v;
}

TEST(MaskformerMetrics, EqualSaltsFormulasOverAnEpoch) {
  const auto py = testing::run_python(kReference);
  ASSERT_EQ(py.exit_code, 0) << py.err;
  std::istringstream lines(py.out);
  std::string line;
  MaskformerMetrics metrics({"b", "c", "null"}, {"pt", "Lxy"});
  const int64_t B = 6, M = 4, L = 7;
  for (int batch = 0; batch < 2; ++batch) {
    std::vector<std::vector<double>> t(7);
    for (auto& v : t) {
      ASSERT_TRUE(std::getline(lines, line));
      v = numbers(line);
    }
    auto f = [](const std::vector<double>& v, std::vector<int64_t> shape) { return torch::tensor(v).reshape(shape); };
    metrics.add(f(t[0], {B, M, 3}), f(t[1], {B, M, L}), f(t[2], {B, M}).to(torch::kInt64),
                f(t[3], {B, M, L}).to(torch::kBool), f(t[4], {B, L}).to(torch::kBool), f(t[5], {B, M, 2}),
                f(t[6], {B, M, 2}));
  }
  const auto got = metrics.compute();
  int checked = 0;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string key;
    double want = 0;
    in >> key >> want;
    ASSERT_TRUE(got.count(key)) << key;
    EXPECT_NEAR(got.at(key), want, 1e-6) << key;  // torch divides integer counts in float32
    ++checked;
  }
  EXPECT_EQ(checked, 14);
  EXPECT_EQ(got.size(), 14u);
}

}  // namespace
}  // namespace salt::models
