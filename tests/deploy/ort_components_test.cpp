// Each component's ONNX export, run in the real ONNX Runtime (scripts/ort_run.js
// with onnxruntime-node), against the component's own LibTorch forward on random
// inputs: activations, norms, attention, GLU, pooling and a transformer encoder
// with 0, 1 and several tokens.
#include <gtest/gtest.h>

#include "deploy/ort_runner.h"
#include "export/graph.h"
#include "export/layers.h"
#include "models/activation.h"
#include "models/attention.h"
#include "models/glu.h"
#include "models/norm.h"
#include "models/pooling.h"
#include "models/transformer.h"
#include "models/vertexing_task.h"
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
      for (const auto& v : kv.second["data"]) data.push_back(v.as<float>());
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
    auto preds = task->forward(xs.unsqueeze(0), mask, jets[j].at("ctx"), nullptr).preds;
    auto want = task->predict(preds, mask, nullptr, "m").values.reshape({n}).to(torch::kFloat32);
    EXPECT_TRUE(torch::equal(got[j].at("m_VertexIndex"), want)) << n << " tracks: " << got[j].at("m_VertexIndex") << want;
    shared += (want != torch::arange(n).to(torch::kFloat32)).sum().item<int64_t>();
  }
  std::printf("%lld tracks assigned to another track's vertex\n", static_cast<long long>(shared));
  EXPECT_GT(shared, 5);  // the propagation was exercised
}

}  // namespace
}  // namespace salt
