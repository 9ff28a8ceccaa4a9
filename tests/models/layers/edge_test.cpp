// Edge features (salt's GN2XE): the pairwise features against a per-pair Python
// loop written from salt's formulas, the encoder with EdgeAttention against an
// independent Python torch implementation of salt's Transformer / EncoderLayer /
// EdgeAttention on the same weights, and the one-line refusals of bad configs.
#include "models/layers/edge_features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "config/data_config.h"
#include "config/edge_config.h"
#include "core/errors.h"
#include "models/layers/transformer.h"
#include "models/packing/common.h"
#include "models/packing/forward_context.h"
#include "models/model_factory.h"
#include "models/model_test_helpers.h"
#include "support/test_support.h"

namespace salt::models {
namespace {

// One pair at a time with Python's math module: no broadcasting shared with the C++.
const char* kEdgeReference = R"(
x = P["x"]  # columns: pt, eta, phi, subjetIndex, energy
def safe(f):
    try:
        v = f()
    except (ValueError, ZeroDivisionError):
        return 0.0
    return v if math.isfinite(v) else 0.0
out = []
for b in range(x.shape[0]):
    for i in range(x.shape[1]):
        for j in range(x.shape[1]):
            pi_, ei, fi, si, Ei = [float(v) for v in x[b, i]]
            pj, ej, fj, sj, Ej = [float(v) for v in x[b, j]]
            dphi = fj - fi
            if dphi > math.pi: dphi -= 2 * math.pi
            dr = math.hypot(ej - ei, dphi)
            m = lambda pt, eta, phi: (pt * math.cos(phi), pt * math.sin(phi), pt * math.sinh(eta))
            a, c = m(pi_, ei, fi), m(pj, ej, fj)
            m2 = (Ei + Ej) ** 2 - sum((a[k] + c[k]) ** 2 for k in range(3))
            out += [safe(lambda: math.log(dr)),
                    safe(lambda: math.log(min(pi_, pj) / (pi_ + pj))),
                    safe(lambda: math.log(min(pi_, pj) * dr)),
                    1.0 if i == j else 0.0,
                    1.0 if (si == sj and sj >= 0) else 0.0,
                    0.5 * math.log(max(m2, 1e-8))]
print(" ".join(repr(v) for v in out))
)";

TEST(EdgeFeatures, EqualSaltsFormulasPairByPair) {
  // 2 jets x 4 tracks; jet 0's last track is padding (zeros), phi pairs cross +-pi.
  auto x = torch::tensor({{{20.f, 0.1f, 3.0f, 0.f, 21.f}, {5.f, -0.2f, -3.0f, 1.f, 6.f},
                           {8.f, 0.3f, 0.5f, 0.f, 9.f}, {0.f, 0.f, 0.f, 0.f, 0.f}},
                          {{3.f, 1.1f, -0.4f, -1.f, 6.f}, {12.f, 1.0f, -0.3f, -1.f, 19.f},
                           {7.f, 0.9f, 0.2f, 1.f, 10.f}, {4.f, 1.3f, -0.1f, 1.f, 8.f}}});
  const std::map<std::string, int64_t> cols{{"pt", 0}, {"eta", 1}, {"phi", 2}, {"subjetIndex", 3}, {"energy", 4}};
  const auto got = edge_features(x, cols, {"dR", "z", "kt", "isSelfLoop", "subjetIndex", "mass"});
  ASSERT_EQ(got.sizes(), (std::vector<int64_t>{2, 4, 4, 6}));
  EXPECT_TRUE(torch::isfinite(got).all().item<bool>());

  salt::testing::TempDir dir;
  const auto file = dir / "x.txt";
  {
    std::ofstream out(file);
    testing::dump_tensor(out, "x", x);
  }
  const auto py = salt::testing::run_python(std::string(testing::kPythonTensorLoader) + kEdgeReference, {file.string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  const auto want = torch::tensor(testing::numbers_of(py.out), torch::kDouble);
  ASSERT_EQ(want.numel(), got.numel());
  const auto diff = (got.to(torch::kDouble).flatten() - want).abs();
  EXPECT_LT(diff.max().item<double>(), 2e-5) << "worst pair feature " << diff.argmax().item<int64_t>();
}

// salt's Transformer forward with edges, literally: registers appended, edges
// zero-padded to them, per layer pre-norm EdgeAttention (scores + linear_e,
// softmax at allowed keys times sigmoid(linear_g)), edges = e_out + LN(e_out),
// pre-norm GLU; then out_proj and the final LayerNorm (no affine parameters).
const char* kEncoderReference = R"(
x_in, pad, e_in = P.pop("input.x"), P.pop("input.pad").bool(), P.pop("input.edges")
H, NL = 2, 2
ln = lambda t: F.layer_norm(t, (t.shape[-1],))
lin = lambda p, t: F.linear(t, P[p + ".weight"], P[p + ".bias"])
def edge_attention(p, x, e, pad):
    B, L, D = x.shape
    q, k, v = F.linear(x, P[p + ".in_proj_weight"], P[p + ".in_proj_bias"]).chunk(3, -1)
    q, k, v = (t.view(B, L, H, D // H).transpose(1, 2) for t in (q, k, v))
    allowed = (~pad).unsqueeze(-2).expand(-1, L, -1).unsqueeze(1)
    s = q @ k.transpose(-2, -1) / math.sqrt(D // H) + lin(p + ".linear_e", e).permute(0, 3, 1, 2)
    e_out = lin(p + ".linear_e_out", s.permute(0, 2, 3, 1))
    w = s.masked_fill(~allowed, float("-inf")).softmax(-1) * torch.sigmoid(lin(p + ".linear_g", e)).permute(0, 3, 1, 2)
    return lin(p + ".out_proj", (w @ v).transpose(1, 2).reshape(B, L, D)), e_out
B, L, _ = x_in.shape
R = P["registers"].shape[0]
x = torch.cat([x_in, P["registers"].expand(B, -1, -1)], 1)
pad = torch.cat([pad, torch.zeros(B, R, dtype=torch.bool)], 1)
e = torch.zeros(B, L + R, L + R, e_in.shape[-1])
e[:, :L, :L] = e_in
for i in range(NL):
    p = f"layers.{i}"
    o, e = edge_attention(p + ".attn.fn", ln(x), e, pad)
    x = x + o
    e = e + ln(e)
    x = x + lin(p + ".dense.fn.out_proj", F.silu(lin(p + ".dense.fn.in_proj", ln(x))))
x = ln(lin("out_proj", x))
print(" ".join(repr(float(v)) for v in x.flatten()))
)";

TEST(EdgeEncoder, EqualsSaltsAlgorithmInPython) {
  torch::manual_seed(5);
  const int64_t B = 2, L = 4, D = 8, E = 4;
  auto options = TransformerOptions(2, D).out_dim(6).num_registers(2).edge_embed_dim(E).update_edges(true);
  options.attn_kwargs(AttentionOptions(D).num_heads(2));
  Transformer encoder(options);
  encoder->eval();
  const auto x = torch::randn({B, L, D});
  const auto edges = torch::randn({B, L, L, E});
  auto pad = torch::zeros({B, L}, torch::kBool);
  pad[0][2] = pad[0][3] = true;

  salt::testing::TempDir dir;
  const auto file = dir / "weights.txt";
  {
    std::ofstream out(file);
    for (const auto& p : encoder->named_parameters()) testing::dump_tensor(out, p.key(), p.value());
    testing::dump_tensor(out, "input.x", x);
    testing::dump_tensor(out, "input.pad", pad);
    testing::dump_tensor(out, "input.edges", edges);
  }
  const auto py = salt::testing::run_python(std::string(testing::kPythonTensorLoader) + kEncoderReference, {file.string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  const auto want = torch::tensor(testing::numbers_of(py.out), torch::kDouble).view({B, L + 2, 6});

  const auto packed = PackedSequence::pack(Sequence{x, {Segment{"tracks", pad}}});
  const auto out = encoder->forward_packed(packed, {}, edges, "tracks").unpack();
  ASSERT_EQ(out.x.sizes(), (std::vector<int64_t>{B, L + 2, 6}));
  const auto valid = out.mask().logical_not().unsqueeze(-1);
  const auto diff = (out.x.to(torch::kDouble) - want).abs().masked_fill(valid.logical_not(), 0.0);
  EXPECT_LT(diff.max().item<double>(), 2e-5);
  // The edges matter: other edges, other outputs.
  const auto other = encoder->forward_packed(packed, {}, edges * 2, "tracks").unpack();
  EXPECT_GT((other.x - out.x).abs().max().item<double>(), 1e-3);
  // Its parameters are salt's (linear_e / linear_g / linear_e_out inside attn.fn).
  const auto names = encoder->named_parameters().keys();
  for (const char* key : {"layers.0.attn.fn.linear_e.weight", "layers.1.attn.fn.linear_g.bias",
                          "layers.1.attn.fn.linear_e_out.weight", "layers.0.attn.fn.in_proj_weight"})
    EXPECT_NE(std::find(names.begin(), names.end(), key), names.end()) << key;
}

// The encoder's edge layers run on the padded layout, then pack its output again: as
// the step's kernels ask (bucketed rows, forward_context.h), with the plain packing's
// values on every valid slot.
TEST(EdgeEncoder, PacksItsOutputAsTheStepsKernelsAsk) {
  torch::manual_seed(6);
  const int64_t L = 40, D = 8, E = 4;
  auto options = TransformerOptions(1, D).out_dim(6).edge_embed_dim(E).update_edges(true);
  options.attn_kwargs(AttentionOptions(D).num_heads(2));
  Transformer encoder(options);
  encoder->eval();
  const auto x = torch::randn({1, L, D});
  const auto edges = torch::randn({1, L, L, E});
  const auto pad = torch::arange(L).ge(33).view({1, L});  // 33 valid tracks: a bucket of 34 rows
  ForwardContext bucketed;
  bucketed.kernels.bucketed_rows = true;
  const auto plain = encoder->forward_packed(PackedSequence::pack(Sequence{x, {Segment{"tracks", pad}}}), {}, edges,
                                             "tracks");
  const auto padded = encoder->forward_packed(PackedSequence::pack(Sequence{x, {Segment{"tracks", pad}}}, bucketed),
                                              {}, edges, "tracks");
  EXPECT_FALSE(plain.row_valid().defined());
  ASSERT_TRUE(padded.row_valid().defined());
  EXPECT_GT(padded.x.size(0), plain.x.size(0));  // the valid rows and the register, then padding rows
  EXPECT_TRUE(padded.kernels.bucketed_rows);
  const auto want = plain.unpack(), got = padded.unpack();
  ASSERT_EQ(got.x.sizes(), want.x.sizes());
  const auto valid = want.mask().logical_not().unsqueeze(-1);
  EXPECT_LT((got.x - want.x).abs().masked_fill(valid.logical_not(), 0).max().item<double>(), 1e-5);
}

TEST(EdgeConfig, BadConstructorsAreOneLineNamingTheKey) {
  using config::EdgeConstructorConfig;
  const std::map<std::string, std::vector<std::string>> vars{{"jets", {"pt"}}, {"tracks", {"pt", "eta", "d0"}}};
  auto check = [&](std::vector<EdgeConstructorConfig> c) {
    return testing::usage_error_of([&] { config::check_edge_constructors(c, vars); });
  };
  EXPECT_EQ(check({{"tracks", {"z", "isSelfLoop"}}}), "(accepted)");
  EXPECT_EQ(check({{"tracks", {"dR"}}}),
            "data.edge_constructors[0].edge_features[0]: 'dR' needs the tracks variable(s) phi in data.variables.tracks");
  EXPECT_EQ(check({{"tracks", {"z", "angle"}}}),
            "data.edge_constructors[0].edge_features[1]: unknown edge feature 'angle' (choose from dR, z, kt, "
            "isSelfLoop, subjetIndex, mass)");
  EXPECT_EQ(check({{"hits", {"z"}}}), "data.edge_constructors[0].input_name: 'hits' is not an input of data.variables");
  EXPECT_NE(check({{"tracks", {"z"}}, {"tracks", {"z"}}}).find("at most one edge constructor"), std::string::npos);
}

// A small GN2XE: the edge init net reads the constructor's features, the encoder's
// edge_embed_dim must match it, and mismatches are one line naming the key.
TEST(EdgeConfig, ModelBuildsWithItsEdgeNetAndRefusesMismatches) {
  const std::string yaml = R"(
class_path: salt.models.SaltModel
init_args:
  init_nets:
    - input_name: tracks
      dense_config: { output_size: 8, hidden_layers: [8] }
  edge_init_nets:
    - input_name: tracks
      dense_config: { output_size: 4, hidden_layers: [4] }
  encoder:
    class_path: salt.models.Transformer
    init_args: { num_layers: 1, embed_dim: 8, edge_embed_dim: 4, update_edges: true, out_dim: 8, attn_kwargs: { num_heads: 2 } }
  pool_net: { class_path: salt.models.GlobalAttentionPooling, init_args: { input_size: 8 } }
  tasks:
    class_path: torch.nn.ModuleList
    init_args:
      modules:
        - class_path: salt.models.ClassificationTask
          init_args:
            name: jets_classification
            input_name: jets
            label: flavour_label
            loss: torch.nn.CrossEntropyLoss
            dense_config: { input_size: 8, output_size: 4 }
)";
  auto ctx = testing::make_context(2, 0);
  ctx.variables["tracks"] = {"pt", "eta", "phi", "d0"};
  ctx.norm["tracks"] = NormStats{std::vector<float>(4, 0.0f), std::vector<float>(4, 1.0f)};
  ctx.edge_constructors = {{"tracks", {"dR", "z", "isSelfLoop"}}};
  auto model = build_model(YAML::Load(yaml), ctx);
  ASSERT_TRUE(model->model->edge_init_nets);
  EXPECT_EQ(model->model->edge_input(), "tracks");
  const auto names = model->named_parameters().keys();
  // 3 edge features in, no jet variables attached (salt's attach_global: false)
  const auto w = model->named_parameters()["model.edge_init_nets.0.net.net.0.weight"];
  EXPECT_EQ(w.sizes(), (std::vector<int64_t>{4, 3}));

  // A forward pass on raw inputs: the wrapper builds the edges before the norm.
  torch::manual_seed(0);
  TensorMap inputs{{"jets", torch::randn({3, 2})}, {"tracks", torch::rand({3, 5, 4}) + 0.1}};
  auto pad = torch::zeros({3, 5}, torch::kBool);
  pad[1][4] = true;
  model->eval();
  const auto out = model->forward(inputs, {{"tracks", pad}});
  EXPECT_TRUE(torch::isfinite(out.preds.at("jets").at("jets_classification")).all().item<bool>());

  // salt's written config.yaml names the edge init net's input with its prefix
  std::string salt_written = yaml;
  const std::string edge_net = "    - input_name: tracks\n      dense_config: { output_size: 4";
  ASSERT_NE(salt_written.find(edge_net), std::string::npos);
  salt_written.replace(salt_written.find(edge_net), edge_net.size(),
                       "    - input_name: _edge_features_tracks\n      attach_global: false\n      dense_config: { output_size: 4");
  EXPECT_EQ(build_model(YAML::Load(salt_written), ctx)->model->edge_input(), "tracks");

  // salt sorts init_nets so that the edge input's net comes first (a stable sort):
  // it is init_nets.0 and its tokens lead the encoder's sequence.
  std::string flows_first = yaml;
  const std::string tracks_net = "  init_nets:\n    - input_name: tracks\n";
  ASSERT_NE(flows_first.find(tracks_net), std::string::npos);
  flows_first.replace(flows_first.find(tracks_net), tracks_net.size(),
                      "  init_nets:\n    - input_name: flows\n      dense_config: { output_size: 8, hidden_layers: [8] }\n"
                      "    - input_name: tracks\n");
  auto two = ctx;
  two.variables["flows"] = {"pt", "eta", "energy"};
  two.norm["flows"] = NormStats{std::vector<float>(3, 0.0f), std::vector<float>(3, 1.0f)};
  const auto sorted = build_model(YAML::Load(flows_first), two);
  ASSERT_EQ(sorted->model->init_net_list().size(), 2u);
  EXPECT_EQ(sorted->model->init_net_list()[0]->input_name(), "tracks");
  EXPECT_EQ(sorted->model->init_net_list()[1]->input_name(), "flows");
  EXPECT_EQ(sorted->named_parameters()["model.init_nets.1.net.net.0.weight"].size(1), 3 + 2);  // flows + jets

  auto with = [&](const std::string& from, const std::string& to, ModelContext c) {
    std::string y = yaml;
    y.replace(y.find(from), from.size(), to);
    return testing::usage_error_of([&] { build_model(YAML::Load(y), c); });
  };
  auto no_edges = ctx;
  no_edges.edge_constructors.clear();
  EXPECT_EQ(with("edge_embed_dim: 4", "edge_embed_dim: 4", no_edges),
            "model.model.init_args.edge_init_nets[0].input_name: no data.edge_constructors entry computes edge "
            "features of 'tracks'");
  EXPECT_EQ(with("edge_embed_dim: 4, update_edges: true", "edge_embed_dim: 6, update_edges: true", ctx),
            "model.model.init_args.edge_init_nets[0].dense_config.output_size: 4 must equal the encoder's "
            "edge_embed_dim 6");
  EXPECT_NE(with("edge_embed_dim: 4, update_edges: true", "update_edges: true", ctx).find("update_edges needs edge_embed_dim"),
            std::string::npos);
}

}  // namespace
}  // namespace salt::models

namespace salt::models {
namespace {

// The config.yaml salt writes for a GN2XE run: data.variables carries the edge
// features and the edge init net its prefixed input name; both are accepted.
TEST(EdgeConfig, SaltsWrittenConfigIsAccepted) {
  const auto d = config::data_config_from_yaml(YAML::Load(
      "variables: {jets: [pt], tracks: [pt, eta, phi], _edge_features_tracks: [dR]}\n"
      "edge_constructors: [{input_name: tracks, edge_features: [dR]}]\n"));
  EXPECT_EQ(d.variables.count("_edge_features_tracks"), 0u);
  ASSERT_EQ(d.edge_constructors.size(), 1u);
  EXPECT_EQ(d.edge_constructors[0].edge_features, std::vector<std::string>{"dR"});
}

}  // namespace
}  // namespace salt::models
