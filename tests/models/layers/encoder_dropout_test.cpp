// The encoder's dropout (attention weights and GLU) in a training CPU step draws
// salt's masks: salt runs its Transformer on the padded tokens (every segment's
// slots, registers last; flash-varlen packs only on a GPU), salt-cpp on the valid
// rows laid out the same way (TokenLayout::padded_as_salt). Checked against salt's
// encoder written out with Python's torch (its definitions in salt/models/
// transformer.py, attention.py and layernorm.py: pre-norm residuals (LayerNorm without
// affine parameters), torch-math attention with
// the weights' dropout, GLU with dropout before out_proj, final LayerNorm).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "models/layers/transformer.h"
#include "models/model_test_helpers.h"
#include "models/packing/common.h"
#include "support/test_support.h"

using namespace salt::models;

namespace {

const char* kSaltsEncoder = R"(
import math, sys
import torch
import torch.nn.functional as F

def fill(name, shape):
    h = sum(ord(c) for c in name) % 97
    n = math.prod(shape)
    return (0.3 * torch.sin(0.7 * torch.arange(n, dtype=torch.float64) + 0.13 * h)).float().view(shape)

D, HID, HEADS, LAYERS, R, PA, PD = 4, 6, 2, 2, 1, 0.3, 0.4
p = {}
for k in range(LAYERS):
    for name, shape in [("attn.fn.in_proj_weight", (3 * D, D)), ("attn.fn.in_proj_bias", (3 * D,)),
                        ("attn.fn.out_proj.weight", (D, D)), ("attn.fn.out_proj.bias", (D,)),
                        ("dense.fn.in_proj.weight", (HID, D)), ("dense.fn.in_proj.bias", (HID,)),
                        ("dense.fn.out_proj.weight", (D, HID)), ("dense.fn.out_proj.bias", (D,))]:
        p[f"layers.{k}.{name}"] = fill(f"layers.{k}.{name}", shape)
p["registers"] = fill("registers", (R, D))

def attention(pre, x, pad):
    b, s, d = x.shape
    hd = d // HEADS
    qkv = F.linear(x, p[pre + "in_proj_weight"], p[pre + "in_proj_bias"])
    q, k, v = (t.view(b, s, HEADS, hd).transpose(1, 2) for t in qkv.chunk(3, -1))
    scores = (q @ k.transpose(-1, -2) / math.sqrt(hd)).masked_fill(pad[:, None, None, :], float("-inf"))
    weights = F.dropout(scores.softmax(-1), PA, training=True)  # torch-math SDPA's dropout
    out = (weights @ v).transpose(1, 2).reshape(b, s, d)
    return F.linear(out, p[pre + "out_proj.weight"], p[pre + "out_proj.bias"])

def glu(pre, x):
    h = F.silu(F.linear(x, p[pre + "in_proj.weight"], p[pre + "in_proj.bias"]))
    return F.linear(F.dropout(h, PD, training=True), p[pre + "out_proj.weight"], p[pre + "out_proj.bias"])

def norm(x):  # salt's LayerNorm: elementwise_affine=False
    return F.layer_norm(x, (D,))

x = torch.linspace(-1.0, 1.3, 24).view(2, 3, D)
pad = torch.tensor([[False, False, True], [False, False, False]])
x = torch.cat([x, p["registers"].expand(2, R, D)], 1)
pad = torch.cat([pad, torch.zeros(2, R, dtype=torch.bool)], 1)
torch.manual_seed(int(sys.argv[1]))
for k in range(LAYERS):
    pre = f"layers.{k}."
    x = x + attention(pre + "attn.fn.", norm(x), pad)
    x = x + glu(pre + "dense.fn.", norm(x))
x = norm(x)
print(" ".join(f"{v:.8g}" for v in x[~pad].flatten().tolist()))
print(f"{torch.rand(1).item():.8g}")
)";

}  // namespace

TEST(EncoderDropout, ATrainingStepDrawsSaltsMasksOnItsPaddedTokens) {
  SALT_REQUIRE(salt::testing::have_python_module("torch"), "Python torch (python3-torch)");
  Transformer t(TransformerOptions(2, 4)
                    .attn_kwargs(AttentionOptions(0).num_heads(2).dropout(0.3))
                    .dense_kwargs(GLUOptions().hidden_dim(6).dropout(0.4)));
  salt::models::testing::fill_by_name(*t);
  t->train();
  auto mask = torch::tensor({false, false, true, false, false, false}).view({2, 3});
  Sequence s{torch::linspace(-1.0, 1.3, 24).view({2, 3, 4}), {{"tracks", mask}}};
  for (int seed : {5, 11}) {
    torch::manual_seed(seed);
    const auto out = t->forward(s);
    const auto next = torch::rand({1}).item<float>();
    const auto valid = out.mask().logical_not();
    const auto rows = out.x.index({valid}).flatten();

    const auto ref = salt::testing::run_python(kSaltsEncoder, {std::to_string(seed)});
    ASSERT_EQ(ref.exit_code, 0) << ref.err;
    std::istringstream lines(ref.out);
    std::string values_line, next_line;
    std::getline(lines, values_line);
    std::getline(lines, next_line);
    std::istringstream values(values_line);
    std::vector<float> expected;
    for (float v; values >> v;) expected.push_back(v);
    ASSERT_EQ(rows.numel(), static_cast<int64_t>(expected.size())) << "seed " << seed;
    for (int64_t i = 0; i < rows.numel(); ++i) EXPECT_NEAR(rows[i].item<float>(), expected[i], 2e-5) << seed << " " << i;
    EXPECT_FLOAT_EQ(next, std::stof(next_line)) << "the generator is not where salt's is after the step";
  }
}

// The layout itself: every segment's slots, segment after segment, a token at its slot.
TEST(EncoderDropout, SaltsPaddedLayoutPutsEachTokenAtItsSlot) {
  PackedSequence seq;
  seq.batch = 2;
  auto tracks = torch::tensor({false, true, true, false, false, true}).view({2, 3});
  auto regs = torch::zeros({2, 1}, torch::kBool);
  seq.append("tracks", tracks, TokenIndex::from_mask(tracks), torch::zeros({3, 1}));
  seq.append(kRegisters, regs, TokenIndex::from_mask(regs), torch::zeros({2, 1}));
  const auto layout = TokenLayout::padded_as_salt(seq);
  EXPECT_EQ(layout.length, 4);
  // Rows: jet 0's slot 0, jet 1's slots 0 and 1, then the registers of jets 0 and 1.
  EXPECT_TRUE(torch::equal(layout.dest, torch::tensor({0, 4, 5, 3, 7}, torch::kLong))) << layout.dest;
  EXPECT_TRUE(torch::equal(layout.pad_mask, torch::cat({tracks, regs}, 1)));
  EXPECT_TRUE(torch::equal(layout.starts, TokenLayout::of(seq).starts));
  const auto sorted = layout.sorted_view();
  EXPECT_TRUE(torch::equal(sorted.dest, torch::tensor({0, 3, 4, 5, 7}, torch::kLong))) << sorted.dest;
}

