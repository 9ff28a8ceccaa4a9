// Each component's ONNX export, run in the real ONNX Runtime (scripts/ort_run.js
// with onnxruntime-node), against the component's own LibTorch forward on random
// inputs: activations, norms, attention, GLU, pooling and a transformer encoder
// with 0, 1 and several tokens.
#include <gtest/gtest.h>

#include "deploy/ort_runner.h"
#include "export/graph.h"
#include "export/layers.h"
#include "models/layers/activation.h"
#include "models/layers/attention.h"
#include "models/layers/edge_features.h"
#include "models/layers/glu.h"
#include "models/layers/init_net.h"
#include "models/layers/node_query_gap.h"
#include "models/layers/norm.h"
#include "models/layers/pooling.h"
#include "models/layers/transformer.h"
#include "models/maskformer/mask_decoder.h"
#include "models/maskformer/maskformer_outputs.h"
#include "models/tasks/vertexing_task.h"
#include "support/test_support.h"

namespace salt {
namespace {

using Jet = std::map<std::string, torch::Tensor>;

// Runs the finished graph on each jet's inputs; returns each jet's outputs.
std::vector<Jet> run_in_ort(ox::Graph& g, const std::vector<Jet>& jets) {
  const auto runner = deploy::find_ort_runner();
  if (!runner.available()) throw std::runtime_error("ONNX Runtime is needed for this test: " + runner.missing);
  testing::TempDir dir;
  testing::write_file(dir / "m.onnx", ox::finish_model(g, {}));
  std::string json = "{\"jets\": [";
  for (size_t j = 0; j < jets.size(); ++j) {
    json += j ? ",{" : "{";
    bool first = true;
    for (const auto& [name, t] : jets[j]) {
      auto c = t.contiguous();
      json += std::string(first ? "" : ",") + "\"" + name + "\": {\"dims\": [";
      for (int64_t d = 0; d < c.dim(); ++d) json += (d ? "," : "") + std::to_string(c.size(d));
      json += "], \"data\": [";
      for (int64_t i = 0; i < c.numel(); ++i) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.9g", c.data_ptr<float>()[i]);
        json += (i ? "," : "") + std::string(buf);
      }
      json += "]}";
      first = false;
    }
    json += "}";
  }
  testing::write_file(dir / "in.json", json + "]}");
  auto out = deploy::run_ort(runner, dir / "m.onnx", dir / "in.json", dir / "out.json");
  std::vector<Jet> result;
  for (const auto& jet : out["jets"]) {
    Jet r;
    for (const auto& kv : jet) {
      std::vector<int64_t> dims;
      for (const auto& d : kv.second["dims"]) dims.push_back(d.as<int64_t>());
      std::vector<float> data;
      for (const auto& v : kv.second["data"]) data.push_back(v.IsNull() ? NAN : v.as<float>());  // JSON's NaN is null
      r[kv.first.as<std::string>()] = torch::tensor(data, torch::kFloat32).reshape(dims);
    }
    result.push_back(r);
  }
  return result;
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  if (a.numel() == 0) return 0.0;
  return (a - b).abs().max().item<double>();
}

TEST(OnnxComponents, ActivationsMatchTorch) {
  torch::manual_seed(3);
  auto x = torch::randn({6, 5}) * 3;
  x[0][0] = 25;  // above Softplus' threshold
  ox::Graph g("activations");
  auto in = g.input("x", ox::DType::kFloat, {6, 5});
  std::map<std::string, torch::Tensor> expected;
  for (const auto& name : models::activation_names()) {
    auto m = models::make_activation(name);
    m.ptr()->eval();  // RReLU: the mean slope
    g.output(models::activation_to_onnx(g, *m.ptr(), in), "out_" + name, ox::DType::kFloat, {6, 5});
    expected["out_" + name] = m.forward(x);
  }
  auto got = run_in_ort(g, {{{"x", x}}});
  for (const auto& [name, want] : expected) {
    const double d = max_diff(got[0].at(name), want);
    EXPECT_LE(d, 1e-5) << name;
    std::printf("%-22s max |diff| %.2e\n", name.c_str(), d);
  }
}

TEST(OnnxComponents, NormsAttentionGluAndPoolingMatchTorch) {
  torch::manual_seed(4);
  const int64_t d = 8;
  models::Norm layer_norm("LayerNorm", d), rms("RMSNorm", d);
  torch::NoGradGuard no_grad;
  rms->weight.uniform_(0.5, 1.5);
  models::Attention attn(models::AttentionOptions(d).num_heads(2).do_qk_norm(true).do_v_norm(true));
  models::GLU glu(models::GLUOptions(d).gated(true).activation("GELU"));
  models::GlobalAttentionPooling pool(d);
  for (auto* m : std::vector<torch::nn::Module*>{attn.get(), glu.get(), pool.get()}) m->eval();

  ox::Graph g("components");
  auto x = g.input("x", ox::DType::kFloat, {"n", d});
  g.output(layer_norm->to_onnx(g, x), "layer_norm", ox::DType::kFloat, {"n", d});
  g.output(rms->to_onnx(g, x), "rms_norm", ox::DType::kFloat, {"n", d});
  g.output(attn->to_onnx(g, x), "attention", ox::DType::kFloat, {"n", d});
  g.output(glu->to_onnx(g, x), "glu", ox::DType::kFloat, {"n", d});
  g.output(pool->to_onnx(g, x), "pooling", ox::DType::kFloat, {1, d});

  std::vector<Jet> jets;
  for (int64_t n : {1, 2, 7}) jets.push_back({{"x", torch::randn({n, d})}});
  auto got = run_in_ort(g, jets);
  for (size_t j = 0; j < jets.size(); ++j) {
    const auto& in = jets[j].at("x");
    EXPECT_LE(max_diff(got[j].at("layer_norm"), layer_norm->forward(in)), 1e-5);
    EXPECT_LE(max_diff(got[j].at("rms_norm"), rms->forward(in)), 1e-5);
    EXPECT_LE(max_diff(got[j].at("attention"), attn->forward(in.unsqueeze(0)).squeeze(0)), 1e-5);
    EXPECT_LE(max_diff(got[j].at("glu"), glu->forward(in)), 1e-5);
    EXPECT_LE(max_diff(got[j].at("pooling"), pool->forward(in.unsqueeze(0))), 1e-5);
  }
}

// The encoder on 0, 1 and 9 tokens, hybrid norms with LayerScale and registers dropped
// or kept: what the jet-level export builds on.
TEST(OnnxComponents, TransformerEncoderMatchesTorchForAnyTokenCount) {
  torch::manual_seed(5);
  const int64_t d = 8;
  for (const std::string norm_type : {"pre", "post", "hybrid"}) {
    auto o = models::TransformerOptions(2, d).num_registers(2).out_dim(6).norm_type(norm_type).ls_init(0.3);
    o.attn_kwargs(models::AttentionOptions(d).num_heads(2));
    o.drop_registers(norm_type == "post");
    o.norm(norm_type == "hybrid" ? "RMSNorm" : "LayerNorm");
    models::Transformer enc(o);
    enc->eval();
    ox::Graph g("encoder");
    auto x = g.input("x", ox::DType::kFloat, {"n", d});
    g.output(enc->to_onnx(g, x), "encoded", ox::DType::kFloat, {"m", 6});
    std::vector<Jet> jets;
    for (int64_t n : {0, 1, 9}) jets.push_back({{"x", torch::randn({n, d})}});
    auto got = run_in_ort(g, jets);
    for (size_t j = 0; j < jets.size(); ++j) {
      torch::NoGradGuard no_grad;
      const auto& in = jets[j].at("x");
      const int64_t n = in.size(0);
      models::Sequence seq{in.unsqueeze(0), {{"tracks", torch::zeros({1, n}, torch::kBool)}}};
      auto want = enc->forward(seq).x.squeeze(0);
      const double diff = max_diff(got[j].at("encoded"), want);
      EXPECT_LE(diff, 1e-5) << norm_type << " with " << n << " tokens";
      std::printf("encoder %-6s %d tokens: max |diff| %.2e\n", norm_type.c_str(), int(n), diff);
    }
  }
}

}  // namespace
}  // namespace salt

namespace salt {
namespace {

// Vertexing: a freshly initialised edge net links about half of the pairs, so the
// label propagation in the graph meets real multi-track vertices; the indices must
// equal vertex_assignment()'s union-find on salt-cpp's own edge logits.
TEST(OnnxComponents, VertexIndexEqualsUnionFindOfTheEdgeNet) {
  torch::manual_seed(6);
  const int64_t d = 6, c = 4;
  auto dense = models::DenseOptions(2 * d).context_size(c).output_size(1).hidden_layers(std::vector<int64_t>{16});
  models::TaskOptions opts("track_vertexing", "tracks", dense, models::LossOptions(models::LossKind::BCEWithLogits));
  auto task = std::make_shared<models::VertexingTaskImpl>(opts, "ftagTruthVertexIndex");
  task->eval();
  ox::Graph g("vertexing");
  auto x = g.input("x", ox::DType::kFloat, {"n", d});
  auto ctx = g.input("ctx", ox::DType::kFloat, {1, c});
  models::OnnxTaskInput in;
  in.x = x;
  in.context = ctx;
  auto outs = task->to_onnx(g, in, "m");
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].name, "m_VertexIndex");
  g.output(outs[0].value, outs[0].name, ox::DType::kInt8, {"n"});
  std::vector<Jet> jets;
  for (int64_t n : {0, 1, 2, 5, 12, 12, 12}) jets.push_back({{"x", torch::randn({n, d})}, {"ctx", torch::randn({1, c})}});
  auto got = run_in_ort(g, jets);
  int64_t shared = 0;
  for (size_t j = 0; j < jets.size(); ++j) {
    torch::NoGradGuard no_grad;
    const auto& xs = jets[j].at("x");
    const int64_t n = xs.size(0);
    auto mask = torch::zeros({1, n}, torch::kBool);
    auto preds = task->forward(xs.unsqueeze(0), mask, jets[j].at("ctx"), nullptr, {}).preds;
    auto want = task->predict(preds, mask, nullptr, "m").values.reshape({n}).to(torch::kFloat32);
    EXPECT_TRUE(torch::equal(got[j].at("m_VertexIndex"), want)) << n << " tracks: " << got[j].at("m_VertexIndex") << want;
    shared += (want != torch::arange(n).to(torch::kFloat32)).sum().item<int64_t>();
  }
  std::printf("%lld tracks assigned to another track's vertex\n", static_cast<long long>(shared));
  EXPECT_GT(shared, 5);  // the propagation was exercised
}

}  // namespace
}  // namespace salt

namespace salt {
namespace {

// MaskFormer: the decoder (mask attention on, its mask net scaled up so that some
// queries hold some tracks with p > 0.9 and others none) and NodeQueryGAP pooling
// tracks and queries, on jets of 0, 1, 3 and 7 tracks, against their LibTorch
// forward on the unpadded jet.
TEST(OnnxComponents, MaskDecoderAndNodeQueryGAPMatchTorchForAnyTrackCount) {
  torch::manual_seed(8);
  const int64_t d = 8, m = 4;
  models::MaskDecoderOptions o;
  o.embed_dim = d;
  o.num_layers = 2;
  o.num_objects = m;
  o.layer = models::MaskDecoderLayerOptions(d).n_heads(2).mask_attention(true).bidirectional_ca(true);
  models::Dense class_net(models::DenseOptions(d).output_size(3).hidden_layers(std::vector<int64_t>{16}));
  models::Dense mask_net(models::DenseOptions(d).output_size(d).hidden_layers(std::vector<int64_t>{16}));
  models::MaskDecoder decoder(o, class_net, mask_net);
  models::NodeQueryGAP pool(d);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : mask_net->parameters()) p.mul_(4);
  }
  decoder->eval();
  pool->eval();

  ox::Graph g("mask_decoder");
  auto x = g.input("x", ox::DType::kFloat, {"n", d});
  auto objects = decoder->to_onnx(g, x);
  g.output(objects.embed, "embed", ox::DType::kFloat, {m, d});
  g.output(objects.class_probs, "class_probs", ox::DType::kFloat, {m, 3});
  g.output(objects.masks, "masks", ox::DType::kFloat, {m, "n"});
  g.output(pool->to_onnx(g, x, objects.embed), "pooled", ox::DType::kFloat, {1, 2 * d});
  std::vector<Jet> jets;
  for (int64_t n : {0, 1, 3, 7}) jets.push_back({{"x", torch::randn({n, d}) * 2}});
  auto got = run_in_ort(g, jets);
  int64_t held = 0, slots = 0;
  for (size_t j = 0; j < jets.size(); ++j) {
    torch::NoGradGuard no_grad;
    const auto& in = jets[j].at("x");
    const int64_t n = in.size(0);
    const auto mask = torch::zeros({1, n}, torch::kBool);
    auto want = decoder->forward(in.unsqueeze(0), mask, {}, nullptr, {}, nullptr).objects;
    double diff = 0;
    diff = std::max(diff, max_diff(got[j].at("embed"), want.embed.squeeze(0)));
    diff = std::max(diff, max_diff(got[j].at("class_probs"), want.class_probs.squeeze(0)));
    diff = std::max(diff, max_diff(got[j].at("masks"), want.masks.squeeze(0)));
    diff = std::max(diff, max_diff(got[j].at("pooled"), pool->forward(in.unsqueeze(0), mask, want.embed)));
    EXPECT_LE(diff, 1e-4) << n << " tracks";
    std::printf("mask decoder + NodeQueryGAP, %d tracks: max |diff| %.2e\n", int(n), diff);
    // What the first layer's mask attention saw: salt's normed queries and tracks plus the dummy.
    auto q0 = decoder->norm1->forward(decoder->inital_q);
    auto x0 = torch::cat({decoder->norm2->forward(in), torch::zeros({1, d})});
    auto p = torch::matmul(mask_net->forward(q0), x0.t()).sigmoid();
    held += (p > 0.9).sum().item<int64_t>();
    slots += p.numel();
  }
  std::printf("mask attention: %lld of %lld (query, track) pairs held in the first layer\n",
              static_cast<long long>(held), static_cast<long long>(slots));
  EXPECT_GT(held, 0);
  EXPECT_LT(held, slots);
}

// The objects as salt's exporter gives them to Athena, in the graph and in LibTorch:
// random objects, a jet whose objects are all null, a jet without tracks.
TEST(OnnxComponents, MaskformerOutputsMatchTorch) {
  torch::manual_seed(9);
  const int64_t m = 5, c = 3, r = 2;
  ox::Graph g("maskformer_outputs");
  auto probs = g.input("probs", ox::DType::kFloat, {m, c});
  auto masks = g.input("masks", ox::DType::kFloat, {m, "n"});
  auto reg = g.input("reg", ox::DType::kFloat, {m, r});
  auto out = models::maskformer_outputs_onnx(g, probs, masks, reg, m, r);
  for (int64_t i = 0; i < r; ++i) g.output(out.leading[static_cast<size_t>(i)], "lead" + std::to_string(i), ox::DType::kFloat, {});
  g.output(out.indices, "index", ox::DType::kInt8, {"n"});
  std::vector<Jet> jets;
  for (int64_t j = 0; j < 12; ++j) {
    const int64_t n = j == 1 ? 0 : 1 + j % 8;
    auto logits = torch::randn({m, c}) * 2;
    if (j == 0) logits.select(1, c - 1).add_(20);  // every object null
    jets.push_back({{"probs", logits.softmax(-1)}, {"masks", torch::randn({m, n}) * 3}, {"reg", torch::randn({m, r}) * 50}});
  }
  auto got = run_in_ort(g, jets);
  int64_t assigned = 0, leading = 0;
  for (size_t j = 0; j < jets.size(); ++j) {
    const auto& jet = jets[j];
    auto want = models::maskformer_outputs(jet.at("probs").unsqueeze(0), jet.at("masks").unsqueeze(0),
                                           jet.at("reg").unsqueeze(0));
    for (int64_t i = 0; i < r; ++i) {
      const float have = got[j].at("lead" + std::to_string(i)).item<float>(), expect = want.leading[0][i].item<float>();
      if (std::isnan(expect)) EXPECT_TRUE(std::isnan(have)) << "jet " << j;
      else EXPECT_FLOAT_EQ(have, expect) << "jet " << j;
      leading += !std::isnan(expect);
    }
    EXPECT_TRUE(torch::equal(got[j].at("index"), want.indices[0].to(torch::kFloat32))) << "jet " << j;
    assigned += (want.indices[0] >= 0).sum().item<int64_t>();
  }
  EXPECT_GT(leading, 10);
  EXPECT_GT(assigned, 10);
}

}  // namespace
}  // namespace salt

namespace salt {
namespace {

// GN2XE: the pairwise features from raw kinematics (phi wrap-around, a pair with
// itself, subjet indices -1/0/1), and the encoder's EdgeAttention layers with
// update_edges, registers and every norm type, in the graph and in LibTorch, on
// jets of 0, 1 and 6 tracks.
TEST(OnnxComponents, EdgeFeaturesAndEdgeEncoderMatchTorchForAnyTrackCount) {
  torch::manual_seed(10);
  const std::vector<std::string> variables{"d0", "pt", "eta", "phi", "energy", "subjetIndex"};
  const std::vector<std::string> features{"dR", "z", "kt", "isSelfLoop", "subjetIndex", "mass"};
  std::map<std::string, int64_t> columns;
  for (size_t i = 0; i < variables.size(); ++i) columns[variables[i]] = static_cast<int64_t>(i);
  const int64_t d = 8, e = 4, f = static_cast<int64_t>(features.size());
  auto raw_jet = [&](int64_t n) {
    auto x = torch::randn({n, 6});
    x.select(1, 1).copy_(torch::rand({n}) * 50 + 1);                // pt
    x.select(1, 3).copy_((torch::rand({n}) * 2 - 1) * M_PI);         // phi, pairs across +-pi
    x.select(1, 4).copy_(x.select(1, 1) * (1 + torch::rand({n})));    // energy >= pt
    x.select(1, 5).copy_(torch::randint(-1, 2, {n}).to(torch::kFloat32));
    return x;
  };
  for (const std::string norm_type : {"pre", "post", "hybrid"}) {
    auto o = models::TransformerOptions(2, d).out_dim(6).num_registers(2).edge_embed_dim(e).update_edges(true).norm_type(norm_type);
    o.attn_kwargs(models::AttentionOptions(d).num_heads(2));
    models::Transformer encoder(o);
    models::Dense edge_net(models::DenseOptions(f).output_size(e).hidden_layers(std::vector<int64_t>{8}));
    encoder->eval();
    edge_net->eval();

    ox::Graph g("edges");
    auto raw = g.input("raw", ox::DType::kFloat, {"n", 6});
    auto x = g.input("x", ox::DType::kFloat, {"n", d});
    auto pairs = models::edge_features_onnx(g, raw, columns, features);
    g.output(pairs, "edge_features", ox::DType::kFloat, {"n", "n", f});
    auto count = g.op("Slice", {g.op("Shape", {raw}), g.ints({0}), g.ints({1})});
    auto embedded = g.op("Reshape", {edge_net->to_onnx(g, g.op("Flatten", {pairs}, {{"axis", int64_t{2}}})),
                                     g.op("Concat", {count, count, g.ints({e})}, {{"axis", int64_t{0}}})},
                         {{"allowzero", int64_t{1}}});
    g.output(encoder->to_onnx(g, x, {}, embedded), "encoded", ox::DType::kFloat, {"m", 6});
    std::vector<Jet> jets;
    for (int64_t n : {0, 1, 6}) jets.push_back({{"raw", raw_jet(n)}, {"x", torch::randn({n, d})}});
    auto got = run_in_ort(g, jets);
    for (size_t j = 0; j < jets.size(); ++j) {
      torch::NoGradGuard no_grad;
      const auto& xs = jets[j].at("x");
      const int64_t n = xs.size(0);
      const auto want_pairs = models::edge_features(jets[j].at("raw").unsqueeze(0), columns, features);
      const double pair_diff = max_diff(got[j].at("edge_features"), want_pairs.squeeze(0));
      // In LibTorch as in training: padded to 8 slots (garbage in the padded ones).
      const int64_t slots = 8;
      auto raw_padded = torch::cat({jets[j].at("raw"), raw_jet(slots - n)}).unsqueeze(0);
      const auto edges = edge_net->forward(models::edge_features(raw_padded, columns, features));
      auto pad = torch::zeros({1, slots}, torch::kBool);
      pad.narrow(1, n, slots - n).fill_(true);
      auto x_padded = torch::cat({xs, torch::randn({slots - n, d})}).unsqueeze(0);
      const auto packed = models::PackedSequence::pack(models::Sequence{x_padded, {{"tracks", pad}}});
      auto encoded = encoder->forward_packed(packed, {}, edges, "tracks").unpack();
      const auto valid = encoded.mask().logical_not()[0];
      const auto want = encoded.x[0].index({valid});
      const double diff = max_diff(got[j].at("encoded"), want);
      EXPECT_LE(pair_diff, 1e-5) << n << " tracks";
      EXPECT_LE(diff, 1e-4) << norm_type << " with " << n << " tracks";
      std::printf("edges %-6s %d tracks: features max |diff| %.2e, encoder max |diff| %.2e\n", norm_type.c_str(), int(n),
                  pair_diff, diff);
    }
  }
}

}  // namespace
}  // namespace salt

namespace salt {
namespace {

// An init net with salt's pos_enc (phi periodic, an encoding not filling dim: zero
// padded) on the jet's variables attached: graph against LibTorch for 0, 1, 5 tracks.
TEST(OnnxComponents, InitNetWithPositionalEncodingMatchesTorch) {
  torch::manual_seed(11);
  const int64_t f = 4, gvars = 2, out = 14;  // 14 = 2 variables x 2 x 3 frequencies + 2 zeros
  auto o = models::InitNetOptions("tracks", "jets", models::DenseOptions(f + gvars).output_size(out));
  o.pos_enc(models::PositionalEncoderOptions().variables({"eta", "phi"}).dim(out).alpha(100));
  o.pos_enc_columns = {1, 3};
  models::InitNet net(o);
  net->eval();
  ox::Graph g("pos_enc");
  std::map<std::string, ox::Value> in{{"tracks", g.input("tracks", ox::DType::kFloat, {"n", f})},
                                      {"jets", g.input("jets", ox::DType::kFloat, {1, gvars})}};
  g.output(net->to_onnx(g, in), "embedded", ox::DType::kFloat, {"n", out});
  std::vector<Jet> jets;
  for (int64_t n : {0, 1, 5}) jets.push_back({{"tracks", torch::randn({n, f}) * 2}, {"jets", torch::randn({1, gvars})}});
  auto got = run_in_ort(g, jets);
  for (size_t j = 0; j < jets.size(); ++j) {
    torch::NoGradGuard no_grad;
    const auto want = net->forward({{"tracks", jets[j].at("tracks").unsqueeze(0)}, {"jets", jets[j].at("jets")}}).squeeze(0);
    const double diff = max_diff(got[j].at("embedded"), want);
    EXPECT_LE(diff, 1e-5) << jets[j].at("tracks").size(0) << " tracks";
    std::printf("init net + pos_enc, %d tracks: max |diff| %.2e\n", int(jets[j].at("tracks").size(0)), diff);
  }
  // The encoding is there: the same net without it differs.
  EXPECT_GT((net->forward({{"tracks", jets[2].at("tracks").unsqueeze(0)}, {"jets", jets[2].at("jets")}}) -
             net->net->forward(models::attach_context(jets[2].at("tracks").unsqueeze(0), jets[2].at("jets"))))
                .abs()
                .max()
                .item<double>(),
            0.1);
}

}  // namespace
}  // namespace salt
