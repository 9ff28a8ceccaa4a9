// maskformer_outputs against salt's get_maskformer_outputs and indices_from_mask
// (salt/models/maskformer.py, salt/utils/mask_utils.py) transcribed into Python
// torch, one jet at a time as its ONNX export calls it, on random objects: a jet
// whose objects are all null, jets where several objects hold the same track.
// salt's eager-only branch for a jet without any null object is left out, as its
// traced graph leaves it out (models/maskformer/maskformer_outputs.h); no jet here takes it.
#include "models/maskformer/maskformer_outputs.h"

#include <gtest/gtest.h>

#include <sstream>

#include "models/model_test_helpers.h"

namespace salt::models {
namespace {

const char* kReference = R"(
import numpy as np, torch
rng = np.random.default_rng(11)
B, M, L, C, R = 8, 5, 6, 3, 2
logits = torch.tensor(rng.normal(size=(B, M, C)) * 2)
logits[0, :, -1] += 20          # jet 0: every object null
logits[1:, -1, -1] += 20        # the others: at least one null object
probs = logits.softmax(-1).float()
masks = torch.tensor(rng.normal(size=(B, M, L)) * 3).float()
reg = torch.tensor(rng.normal(size=(B, M, R)) * 50).float()
for t in (probs, masks, reg):
    print(" ".join(repr(float(v)) for v in t.flatten()))

def indices_from_mask(mask, noindex=-2):  # mask_utils.indices_from_mask, 3-d case
    indices = torch.ones((mask.shape[0], mask.shape[-1]), dtype=torch.long) * noindex
    nz = torch.where(mask)
    indices[nz[0], nz[2]] = nz[1]
    return indices

def get_maskformer_outputs(masks, class_probs, regression, max_null=0.5):
    null_preds = class_probs[:, :, -1] > max_null
    masks = masks.sigmoid() > 0.5
    expanded_null = null_preds.unsqueeze(-1).expand(-1, -1, masks.size(-1))
    masks[expanded_null] = torch.zeros_like(masks)[expanded_null]
    regression[null_preds] = torch.nan
    regression[null_preds] = -torch.inf
    order = torch.argsort(regression[:, :, 0], descending=True)
    regression[null_preds] = torch.nan
    order_expanded = order.unsqueeze(-1).expand(-1, -1, masks.size(-1))
    masks = torch.gather(masks, 1, order_expanded)
    regression = torch.gather(regression, 1, order.unsqueeze(-1).expand(-1, -1, regression.size(-1)))
    return regression[:, 0], indices_from_mask(masks)

for j in range(B):
    lead, idx = get_maskformer_outputs(masks[j:j+1].clone(), probs[j:j+1].clone(), reg[j:j+1].clone())
    print(" ".join(repr(float(v)) for v in lead.flatten()), "|", " ".join(str(int(v)) for v in idx.flatten()))
)";

TEST(MaskformerOutputs, EqualSaltsGetMaskformerOutputsPerJet) {
  const auto py = salt::testing::run_python(kReference);
  ASSERT_EQ(py.exit_code, 0) << py.err;
  std::istringstream lines(py.out);
  std::string line;
  const int64_t B = 8, M = 5, L = 6, C = 3, R = 2;
  std::vector<torch::Tensor> in;
  for (const auto& shape : {std::vector<int64_t>{B, M, C}, {B, M, L}, {B, M, R}}) {
    ASSERT_TRUE(std::getline(lines, line));
    in.push_back(torch::tensor(testing::numbers_of(line), torch::kDouble).to(torch::kFloat32).reshape(shape));
  }
  const auto got = maskformer_outputs(in[0], in[1], in[2]);
  ASSERT_EQ(got.leading.sizes(), (std::vector<int64_t>{B, R}));
  ASSERT_EQ(got.indices.sizes(), (std::vector<int64_t>{B, L}));
  int64_t shared = 0, assigned = 0;
  for (int64_t j = 0; j < B; ++j) {
    ASSERT_TRUE(std::getline(lines, line));
    const auto bar = line.find('|');
    std::istringstream lead(line.substr(0, bar));
    for (int64_t r = 0; r < R; ++r) {
      std::string v;
      lead >> v;
      const double want = std::stod(v);  // "nan" when every object is null
      const double have = got.leading[j][r].item<double>();
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(have)) << "jet " << j;
      else EXPECT_FLOAT_EQ(have, want) << "jet " << j << " target " << r;
    }
    const auto want_idx = testing::numbers_of(line.substr(bar + 1));
    ASSERT_EQ(static_cast<int64_t>(want_idx.size()), L);
    for (int64_t l = 0; l < L; ++l) {
      EXPECT_EQ(got.indices[j][l].item<int64_t>(), static_cast<int64_t>(want_idx[static_cast<size_t>(l)]))
          << "jet " << j << " track " << l;
      assigned += want_idx[static_cast<size_t>(l)] >= 0;
    }
    // Tracks two real objects hold: where "the last one wins" is tested.
    const auto real = in[0][j].select(-1, C - 1) <= 0.5;
    shared += (((in[1][j].sigmoid() > 0.5) & real.unsqueeze(-1)).sum(0) > 1).sum().item<int64_t>();
  }
  EXPECT_TRUE(got.leading[0].isnan().all().item<bool>()) << "jet 0 has only null objects";
  EXPECT_TRUE((got.indices[0] == -2).all().item<bool>());
  EXPECT_GT(shared, 3);
  EXPECT_GT(assigned, 10);
}

}  // namespace
}  // namespace salt::models
