// Trainable parameter counts of GN2, DIPS and DL1 built from salt's configs equal
// salt's (computed below by hand from salt's module definitions), and GN2's
// state-dict keys are salt's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <set>

#include "models/model_test_helpers.h"
#include "models/summary.h"

using namespace salt::models;
using namespace salt::models::testing;

namespace {
// nn.Linear(i, o): i*o weights + o biases.
constexpr int64_t linear(int64_t i, int64_t o) { return i * o + o; }
}  // namespace

TEST(ParamCount, GN2MatchesSalt) {
  auto model = build(kGN2Yaml, make_context(2, 19));
  // InitNet tracks: Dense(21 = 19 track + 2 jet vars -> [256] -> 256)
  const int64_t init = linear(21, 256) + linear(256, 256);  // 71,424
  // Encoder layer: Attention in_proj 3D x D (+3D bias), out_proj D x D;
  // GLU in_proj D -> 2D, out_proj 2D -> D; LayerNorms have no parameters.
  const int64_t D = 256;
  const int64_t layer = (3 * D * D + 3 * D) + linear(D, D) + linear(D, 2 * D) + linear(2 * D, D);  // 526,080
  // 4 layers + out_proj 256 -> 128 + one register token of 256.
  const int64_t encoder = 4 * layer + linear(256, 128) + 1 * 256;  // 2,137,472
  const int64_t pool = linear(128, 1);                             // 129
  // Tasks: Dense(128 -> [128, 64, 32] -> 4); track origin Dense(128 + 128 context -> ... -> 8);
  // vertexing Dense(128 context + 2 x 128 -> ... -> 1).
  auto head = [](int64_t in, int64_t out) { return linear(in, 128) + linear(128, 64) + linear(64, 32) + linear(32, out); };
  const int64_t tasks = head(128, 4) + head(256, 8) + head(384, 1);  // 26,980 + 43,496 + 59,649
  const int64_t salt_total = init + encoder + pool + tasks;
  EXPECT_EQ(salt_total, 2339150);
  EXPECT_EQ(count_parameters(*model).trainable, salt_total);
  EXPECT_EQ(count_parameters(*model).non_trainable, 0);
}

TEST(ParamCount, DIPSMatchesSalt) {
  auto ctx = make_context(2, 21, "dips");
  ctx.class_names = nullptr;
  auto model = build(kDIPSYaml, ctx);
  // InitNet: Dense(23 -> [256] -> 128); pooling Linear(128, 1);
  // task: Dense(128 -> [128, 64, 32] -> 3) (dropout has no parameters).
  const int64_t salt_total = (linear(23, 256) + linear(256, 128)) + linear(128, 1) +
                             (linear(128, 128) + linear(128, 64) + linear(64, 32) + linear(32, 3));
  EXPECT_EQ(salt_total, 66116);
  EXPECT_EQ(count_parameters(*model).trainable, salt_total);
}

TEST(ParamCount, DL1MatchesSalt) {
  auto ctx = make_context(2, 0, "DL1");
  ctx.class_names = [](const std::string&, const std::string&) -> std::optional<std::vector<std::string>> {
    return std::vector<std::string>{"bjets", "cjets", "ujets"};
  };
  auto model = build(kDL1Yaml, ctx);
  // InitNet jets: Dense(2 -> [128, 128, 128] -> 64, Mish); task Dense(64 -> [128] -> 3).
  const int64_t salt_total = (linear(2, 128) + 2 * linear(128, 128) + linear(128, 64)) + (linear(64, 128) + linear(128, 3));
  EXPECT_EQ(salt_total, 50371);
  EXPECT_EQ(count_parameters(*model).trainable, salt_total);
}

TEST(StateDict, GN2KeysMatchSalt) {
  auto model = build(kGN2Yaml, make_context(2, 19));
  std::set<std::string> expected = {
      "model.init_nets.0.net.net.0.weight", "model.init_nets.0.net.net.0.bias",
      "model.init_nets.0.net.net.2.weight", "model.init_nets.0.net.net.2.bias",
      "model.encoder.out_proj.weight",      "model.encoder.out_proj.bias",
      "model.encoder.registers",            "model.encoder.register_mask",
      "model.pool_net.gate_nn.weight",      "model.pool_net.gate_nn.bias",
      "model.tasks.0.loss.weight",          "model.tasks.1.loss.weight",
      "norm.jets_means",                    "norm.jets_stds",
      "norm.tracks_means",                  "norm.tracks_stds",
  };
  for (int l = 0; l < 4; ++l) {
    const auto p = "model.encoder.layers." + std::to_string(l) + ".";
    for (const char* k : {"attn.fn.in_proj_weight", "attn.fn.in_proj_bias", "attn.fn.out_proj.weight",
                          "attn.fn.out_proj.bias", "dense.fn.in_proj.weight", "dense.fn.in_proj.bias",
                          "dense.fn.out_proj.weight", "dense.fn.out_proj.bias"})
      expected.insert(p + k);
  }
  for (int t = 0; t < 3; ++t)
    for (int i : {0, 2, 4, 6})
      for (const char* k : {"weight", "bias"})
        expected.insert("model.tasks." + std::to_string(t) + ".net.net." + std::to_string(i) + "." + k);

  std::set<std::string> actual;
  for (const auto& p : model->named_parameters()) actual.insert(p.key());
  for (const auto& b : model->named_buffers()) actual.insert(b.key());
  EXPECT_EQ(actual, expected);

  // Shapes salt gives them.
  auto params = model->named_parameters();
  EXPECT_EQ(params["model.encoder.layers.0.attn.fn.in_proj_weight"].sizes(), (std::vector<int64_t>{768, 256}));
  EXPECT_EQ(params["model.encoder.registers"].sizes(), (std::vector<int64_t>{1, 256}));
  EXPECT_EQ(params["model.tasks.2.net.net.0.weight"].sizes(), (std::vector<int64_t>{128, 384}));
  auto buffers = model->named_buffers();
  EXPECT_EQ(buffers["model.tasks.0.loss.weight"].sizes(), (std::vector<int64_t>{4}));
  EXPECT_EQ(buffers["norm.tracks_means"].sizes(), (std::vector<int64_t>{19}));
}

TEST(StateDict, AttentionInitIsSalts) {
  auto model = build(small_gn2_yaml(), make_context(2, 19));
  auto params = model->named_parameters();
  EXPECT_EQ(params["model.encoder.layers.0.attn.fn.in_proj_bias"].abs().max().item<float>(), 0.0f);
  // xavier-uniform bound for [3D, D]: sqrt(6 / (D + 3D)).
  const double bound = std::sqrt(6.0 / (16 + 48));
  EXPECT_LE(params["model.encoder.layers.0.attn.fn.in_proj_weight"].abs().max().item<float>(), bound + 1e-6);
  EXPECT_LT(params["model.encoder.registers"].abs().max().item<float>(), 1e-3);
}

TEST(Summary, ListsComponentsAndTotal) {
  auto model = build(kGN2Yaml, make_context(2, 19));
  const auto text = model_summary(*model);
  for (const char* s : {"model.init_nets", "model.encoder", "model.pool_net", "model.tasks", "norm", "SaltModel",
                        "Transformer", "GlobalAttentionPooling", "InputNorm", "2.3 M", "(2339150)", "Trainable params"})
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  if (std::getenv("SALT_SHOW_SUMMARY")) std::cout << text;
  // max_depth 2: no encoder layers listed.
  EXPECT_EQ(text.find("model.encoder.layers"), std::string::npos) << text;
  EXPECT_EQ(human_count(71424), "71.4 K");
  EXPECT_EQ(human_count(129), "129");
}

// configs/MaskFormer.yaml (salt's MaskFormer.yaml on the toy data: 4 jet flavours
// instead of salt's 3) against salt's modules: maskformer.py's MaskDecoder and
// MaskDecoderLayer (torch.nn.LayerNorm has a weight and a bias; the layers' shared
// mask_net counts once, as torch's parameters() deduplicates it).
TEST(ParamCount, MaskFormerMatchesSalt) {
  const auto config = YAML::LoadFile((salt::testing::source_dir() / "configs" / "MaskFormer.yaml").string());
  auto ctx = make_context(2, 19, "MaskFormer");
  salt::config::MaskformerConfig mf;
  mf.object.name = "truth_hadrons";
  mf.object.id_label = "barcode";
  mf.object.class_label = "flavour";
  mf.object.object_classes = {{"b", {5}, 0, 1.0}, {"c", {4}, 1, 1.0}, {"null", {-1}, 2, 1.0}};
  mf.constituent = {"tracks", "ftagTruthParentBarcode"};
  ctx.mf_config = mf;
  auto model = build_model(config["model"]["model"], ctx);
  const int64_t D = 256;
  const int64_t init = linear(21, 256) + linear(256, 256);
  const int64_t attention = 3 * D * D + 3 * D + linear(D, D);
  const int64_t glu = linear(D, 2 * D) + linear(2 * D, D);
  const int64_t encoder = 4 * (attention + glu) + linear(D, D) + 1 * D;  // out_proj 256 -> 256, one register
  const int64_t layer_norm = 2 * D;
  const int64_t decoder_layer = 3 * attention + 2 * glu + 2 * layer_norm;  // q_ca, q_sa, kv_ca; q_dense, kv_dense
  const int64_t decoder = 5 * D                                            // inital_q
                          + linear(D, 2 * D) + linear(2 * D, 3)           // class_net: hidden 2 x input
                          + linear(D, 2 * D) + linear(2 * D, D)           // mask_net
                          + 3 * decoder_layer + 2 * layer_norm;
  auto head = [](int64_t in, int64_t out) { return linear(in, 128) + linear(128, 64) + linear(64, 32) + linear(32, out); };
  const int64_t tasks = head(D, 4) + head(D, 5) + head(2 * D, 8);
  const int64_t salt_total = init + encoder + decoder + linear(D, 1) + tasks;
  EXPECT_EQ(salt_total, 6752469);
  EXPECT_EQ(count_parameters(*model).trainable, salt_total);
  std::cout << "MaskFormer: " << salt_total << " trainable parameters, salt-cpp and salt's formula\n";
}

namespace salt::models {
namespace {

// A zoo config's model with its own data.variables (and edge constructors).
SaltWrapper zoo_model(const std::string& name, size_t num_classes) {
  const auto config = YAML::LoadFile((salt::testing::source_dir() / "tests" / "fixtures" / "zoo" / name).string());
  auto ctx = testing::make_context(1, 1);
  ctx.variables.clear();
  ctx.norm.clear();
  ctx.class_names = [num_classes](const std::string&, const std::string& label) {
    std::vector<std::string> names{"bjets", "cjets", "ujets", "taujets"};
    names.resize(num_classes);
    return label == "flavour_label" ? std::optional<std::vector<std::string>>(names) : std::nullopt;
  };
  for (const auto& kv : config["data"]["variables"]) {
    const auto input = kv.first.Scalar();
    for (const auto& v : kv.second) ctx.variables[input].push_back(v.Scalar());
    const auto n = ctx.variables[input].size();
    ctx.norm[input] = NormStats{std::vector<float>(n, 0.0f), std::vector<float>(n, 1.0f)};
  }
  for (const auto& e : config["data"]["edge_constructors"]) {
    config::EdgeConstructorConfig c{e["input_name"].Scalar(), {}};
    for (const auto& f : e["edge_features"]) c.edge_features.push_back(f.Scalar());
    ctx.edge_constructors.push_back(c);
  }
  return build_model(config["model"]["model"], ctx);
}

auto head(int64_t in, int64_t out) { return linear(in, 128) + linear(128, 64) + linear(64, 32) + linear(32, out); }

// salt's GN2/GN2XE.yaml: salt's module formulas (EdgeAttention adds linear_e and
// linear_g (E -> heads) and, with update_edges, linear_e_out (heads -> E); salt's
// LayerNorm edge_prenorm / edge_postnorm have no parameters).
TEST(ParamCount, GN2XEMatchesSalt) {
  auto model = zoo_model("GN2/GN2XE.yaml", 4);
  const int64_t D = 192, E = 32, H = 4;
  const int64_t init = linear(23 + 3, 256) + linear(256, D);  // tracks + jets variables
  const int64_t edge_init = linear(5, 32) + linear(32, E);   // five edge features, no jet variables
  const int64_t attention = 3 * D * D + 3 * D + linear(D, D) + 2 * linear(E, H) + linear(H, E);
  const int64_t glu = linear(D, 2 * D) + linear(2 * D, D);
  const int64_t encoder = 6 * (attention + glu) + linear(D, 128) + 1 * D;
  const int64_t tasks = head(128, 4) + head(128 + 128, 8) + head(256 + 128, 1);
  const int64_t salt_total = init + edge_init + encoder + linear(128, 1) + tasks;
  EXPECT_EQ(salt_total, 1992734);
  EXPECT_EQ(count_parameters(*model).trainable, salt_total);
  std::cout << "GN2XE: " << salt_total << " trainable parameters, salt-cpp and salt's formula\n";
}

// salt's GN2/GN2_muP.yaml: muP changes initialisation and learning rates, not the
// parameters (salt's MuReadout is an nn.Linear).
TEST(ParamCount, GN2MuPMatchesSalt) {
  auto model = zoo_model("GN2/GN2_muP.yaml", 3);
  const int64_t D = 256;
  const int64_t init = linear(19 + 2, 256) + linear(256, D);
  const int64_t layer = (3 * D * D + 3 * D) + linear(D, D) + linear(D, 2 * D) + linear(2 * D, D);
  const int64_t encoder = 4 * layer + linear(D, 128) + 1 * D;
  const int64_t tasks = head(128, 3) + head(128 + 128, 8) + head(256 + 128, 1);
  const int64_t salt_total = init + encoder + linear(128, 1) + tasks;
  EXPECT_EQ(salt_total, 2339117);
  EXPECT_EQ(count_parameters(*model).trainable, salt_total);
  std::cout << "GN2_muP: " << salt_total << " trainable parameters, salt-cpp and salt's formula\n";
}

}  // namespace
}  // namespace salt::models
