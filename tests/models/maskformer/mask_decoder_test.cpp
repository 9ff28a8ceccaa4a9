// MaskDecoder against an independent Python torch implementation of salt's
// maskformer.py (MaskDecoder.forward, MaskDecoderLayer, get_masks, salt's Attention
// with merge_masks, GLU, Dense) on the same weights: class logits, masks, query
// and constituent embeddings, with padded constituents and mask attention active.
#include "models/maskformer/mask_decoder.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "models/layers/node_query_gap.h"
#include "models/model_factory.h"
#include "models/model_test_helpers.h"
#include "support/test_support.h"

namespace salt::models {
namespace {

const char* kReference = R"(
x_in, pad_in = P.pop("input.x"), P.pop("input.pad").bool()
E, H = x_in.shape[-1], 2

def dense(prefix, x):  # Linear, ReLU, Linear
    h = F.relu(F.linear(x, P[prefix + ".net.0.weight"], P[prefix + ".net.0.bias"]))
    return F.linear(h, P[prefix + ".net.2.weight"], P[prefix + ".net.2.bias"])

def glu(prefix, x):  # salt's GLU: in_proj, SiLU, out_proj
    h = F.silu(F.linear(x, P[prefix + ".in_proj.weight"], P[prefix + ".in_proj.bias"]))
    return F.linear(h, P[prefix + ".out_proj.weight"], P[prefix + ".out_proj.bias"])

def ln(prefix, x):
    return F.layer_norm(x, (E,), P[prefix + ".weight"], P[prefix + ".bias"])

def attention(prefix, x, kv=None, kv_mask=None, attn_mask=None):
    w, b = P[prefix + ".in_proj_weight"], P[prefix + ".in_proj_bias"]
    kv = x if kv is None else kv
    q = F.linear(x, w[:E], b[:E]); k = F.linear(kv, w[E:2*E], b[E:2*E]); v = F.linear(kv, w[2*E:], b[2*E:])
    B, Lq, Lk = x.shape[0], x.shape[1], kv.shape[1]
    q, k, v = (t.view(B, -1, H, E // H).transpose(1, 2) for t in (q, k, v))
    mask = None  # salt's merge_masks: True = allowed
    if kv_mask is not None:
        mask = ~kv_mask.unsqueeze(-2).expand(-1, Lq, -1)
    if attn_mask is not None:
        mask = attn_mask if mask is None else attn_mask & mask
    s = q @ k.transpose(-1, -2) / (E // H) ** 0.5
    if mask is not None:
        s = s.masked_fill(~mask.unsqueeze(1), float("-inf"))
    a = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, Lq, E)
    return F.linear(a, P[prefix + ".out_proj.weight"], P[prefix + ".out_proj.bias"])

def get_masks(x, q, pad):
    m = torch.einsum("bqe,ble->bql", dense("mask_net", q), x)
    m[pad.unsqueeze(1).expand_as(m)] = torch.finfo(m.dtype).min
    return m

held_counts = []
def layer(i, q, kv, kv_mask):
    p = f"layers.{i}"
    attn_mask = get_masks(kv, q, kv_mask).sigmoid() > 0.9
    held_counts.append(int(attn_mask.sum()))
    newmask = torch.all(attn_mask == 0, dim=-1, keepdim=True).expand(attn_mask.shape)
    attn_mask = attn_mask | newmask
    q = q + attention(p + ".q_ca", q, kv, kv_mask, attn_mask)
    q = q + attention(p + ".q_sa", q)
    q = q + glu(p + ".q_dense", q)
    t = attn_mask.transpose(1, 2)  # salt's bidirectional mask, literally
    newmask = torch.all(t == 1, dim=-1, keepdim=True).expand(t.shape)
    t = t | ~newmask.bool()
    kv = kv + attention(p + ".kv_ca", kv, q, attn_mask=t)
    kv = kv + glu(p + ".kv_dense", kv)
    return ln(p + ".norm1", q), ln(p + ".norm2", kv)

B, L = x_in.shape[:2]
q = ln("norm1", P["inital_q"].expand(B, -1, -1))
x = ln("norm2", x_in)
x = torch.cat([x, torch.zeros(B, 1, E)], 1)
pad = torch.cat([pad_in, torch.zeros(B, 1, dtype=torch.bool)], 1)
for i in range(2):
    q, x = layer(i, q, x, pad)
logits = dense("class_net", q)
masks = get_masks(x, q, pad)[:, :, :-1].masked_fill(pad_in.unsqueeze(1), 0.0)
print(" ".join(str(c) for c in held_counts))
for t in (logits, masks, q, x[:, :-1]):
    print(" ".join(repr(float(v)) for v in t.flatten()))
)";

TEST(MaskDecoder, EqualsSaltsAlgorithmInPython) {
  torch::manual_seed(3);
  const int64_t E = 8, M = 3, B = 2, L = 5;
  MaskDecoderOptions o;
  o.embed_dim = E;
  o.num_layers = 2;
  o.num_objects = M;
  o.layer = MaskDecoderLayerOptions(E).n_heads(2).mask_attention(true).bidirectional_ca(true);
  MaskDecoder decoder(o, Dense(DenseOptions(E).output_size(3)), Dense(DenseOptions(E).output_size(E)));
  decoder->eval();
  {  // larger query and mask-net scales, so that some masks pass 0.9 and mask attention matters
    torch::NoGradGuard no_grad;
    decoder->mask_net->parameters()[2].mul_(3.0);
  }
  const auto x = torch::randn({B, L, E});
  auto pad = torch::zeros({B, L}, torch::kBool);
  pad[0][3] = pad[0][4] = true;

  salt::testing::TempDir dir;
  const auto file = dir / "weights.txt";
  {
    std::ofstream out(file);
    for (const auto& p : decoder->named_parameters()) testing::dump_tensor(out, p.key(), p.value());
    testing::dump_tensor(out, "input.x", x);
    testing::dump_tensor(out, "input.pad", pad);
  }
  const auto py = salt::testing::run_python(std::string(testing::kPythonTensorLoader) + kReference, {file.string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  std::istringstream lines(py.out);
  std::string line;
  std::getline(lines, line);
  const auto held = testing::numbers_of(line);
  ASSERT_EQ(held.size(), 2u);
  EXPECT_GT(held[0] + held[1], 0) << "mask attention never restricted a query: the test would not cover it";

  auto out = decoder->forward(x, pad, {}, nullptr, {}, nullptr);
  const auto masks = out.objects.masks.masked_fill(pad.unsqueeze(1), 0.0);
  const std::vector<torch::Tensor> ours{out.objects.class_logits, masks, out.objects.embed, out.x};
  const char* what[] = {"class logits", "masks", "query embeddings", "constituent embeddings"};
  for (size_t i = 0; i < ours.size(); ++i) {
    ASSERT_TRUE(std::getline(lines, line));
    const auto want = torch::tensor(testing::numbers_of(line), torch::kDouble);
    const auto got = ours[i].detach().to(torch::kDouble).flatten();
    ASSERT_EQ(got.numel(), want.numel()) << what[i];
    EXPECT_LT((got - want).abs().max().item<double>(), 2e-5) << what[i];
  }
  // Padded constituents: the lowest float, so their sigmoid is exactly 0.
  EXPECT_EQ(out.objects.masks[0][0][3].item<float>(), std::numeric_limits<float>::lowest());
}

}  // namespace
}  // namespace salt::models

namespace salt::models {
namespace {

// salt's NodeQueryGAP as a MaskFormer's pool_net: it pools the encoded tracks and the
// decoder's final queries, and the jet tasks read the 2 x embed_dim vector.
TEST(MaskDecoder, NodeQueryGAPPoolsTheTracksAndTheQueries) {
  auto config = YAML::LoadFile(
      (salt::testing::source_dir() / "tests" / "fixtures" / "maskformer" / "MaskFormer_small.yaml").string());
  auto model_model = YAML::Load(YAML::Dump(config["model"]["model"]));  // aliases become copies
  model_model["init_args"]["pool_net"] =
      YAML::Load("{class_path: salt.models.NodeQueryGAP, init_args: {input_size: 32}}");
  for (auto task : model_model["init_args"]["tasks"]["init_args"]["modules"]) {
    auto dense = task["init_args"]["dense_config"];
    // remove, then set: the values are YAML aliases of embed_dim, shared with every other use
    if (task["init_args"]["input_name"].Scalar() == "jets") dense.remove("input_size"), dense["input_size"] = 64;
    if (dense["context_size"]) dense.remove("context_size"), dense["context_size"] = 64;
  }
  auto ctx = models::testing::make_context(2, 3, "MaskFormer");
  // without a mask decoder, one line naming the key
  try {
    auto no_decoder = YAML::Clone(model_model);
    no_decoder["init_args"].remove("mask_decoder");
    build_model(no_decoder, ctx);
    ADD_FAILURE() << "NodeQueryGAP without a mask_decoder was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("needs model.model.init_args.mask_decoder"), std::string::npos) << e.what();
  }
  config::MaskformerConfig mf;
  mf.object = {"truth_hadrons", "barcode", std::string("flavour"), {{"b", {5}, 0, 1}, {"c", {4}, 1, 1}, {"null", {-1}, 2, 1}}};
  mf.constituent = {"tracks", "ftagTruthParentBarcode"};
  ctx.mf_config = mf;
  auto model = build_model(model_model, ctx);
  model->eval();
  auto* node_query = model->model->pool_net->as<NodeQueryGAP>();
  ASSERT_TRUE(node_query);
  torch::manual_seed(1);
  TensorMap inputs{{"jets", torch::randn({3, 2})}, {"tracks", torch::randn({3, 6, 3})}};
  auto pad = torch::zeros({3, 6}, torch::kBool);
  pad[1][4] = pad[1][5] = true;
  TensorMap pads{{"tracks", pad}};
  const auto out = model->forward(inputs, pads);
  ASSERT_EQ(out.global_rep.size(1), 64);
  const auto want = node_query->forward(out.sequence.x, out.sequence.mask(), out.objects.objects.embed);
  EXPECT_TRUE(torch::allclose(out.global_rep, want));
  // The second half depends on the queries alone.
  const auto halves = out.global_rep.split(32, 1);
  EXPECT_TRUE(torch::allclose(halves[1], node_query->forward(out.sequence.x * 0, out.sequence.mask(),
                                                                               out.objects.objects.embed)
                                             .split(32, 1)[1]));
}

}  // namespace
}  // namespace salt::models
