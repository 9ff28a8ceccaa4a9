// muP (salt's muP_utils with Microsoft's mup): base shapes from two proxies, the
// file round trip and its refusals, salt's muP initialisation, the readout and
// bias rescaling, MuAdamW's per-parameter learning rates, and salt's coordinate
// check reproduced on CPU: after a few large-lr Adam steps, activations stay O(1)
// as the width grows under muP, while in the standard parametrisation they grow.
#include "models/mup.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.h"
#include "models/model_factory.h"
#include "models/model_test_helpers.h"
#include "training/optim/optimization.h"

namespace salt::models {
namespace {

// A GN2-shaped model of width `w` (init net output and encoder embed_dim), muP or SP.
std::string model_yaml(int64_t w, bool mup, int64_t layers = 2) {
  const std::string m = mup ? "true" : "false";
  return R"(
class_path: salt.models.SaltModel
init_args:
  init_nets:
    - input_name: tracks
      dense_config: { output_size: )" + std::to_string(w) + R"(, hidden_layers: [16], activation: ReLU, mup: )" + m + R"( }
  encoder:
    class_path: salt.models.Transformer
    init_args:
      num_layers: )" + std::to_string(layers) + R"(
      embed_dim: )" + std::to_string(w) + R"(
      out_dim: 8
      mup: )" + m + R"(
      attn_kwargs: { num_heads: 4 }
      dense_kwargs: { activation: ReLU }
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
            dense_config: { input_size: 8, output_size: 4, hidden_layers: [8] }
)";
}

SaltWrapper make(int64_t w, bool mup, int64_t layers = 2) {
  return build_model(YAML::Load(model_yaml(w, mup, layers)), testing::make_context(2, 5));
}

BaseShapes shapes_16_8(int64_t layers = 2) {
  return make_base_shapes(make(16, true, layers)->model->named_parameters(), make(8, true, layers)->model->named_parameters());
}

std::vector<std::optional<int64_t>> shape_of(const BaseShapes& s, const std::string& name) {
  for (const auto& [n, d] : s)
    if (n == name) return d;
  ADD_FAILURE() << "no " << name;
  return {};
}

TEST(Mup, BaseShapesMarkTheWidthsAndRoundTripThroughMupsFile) {
  const auto s = shapes_16_8();
  using V = std::vector<std::optional<int64_t>>;
  const auto none = std::nullopt;
  EXPECT_EQ(shape_of(s, "init_nets.0.net.net.2.weight"), (V{16, none}));  // hidden 16 -> width
  EXPECT_EQ(shape_of(s, "init_nets.0.net.net.0.weight"), (V{none, none}));
  EXPECT_EQ(shape_of(s, "encoder.layers.0.attn.fn.in_proj_weight"), (V{48, 16}));
  EXPECT_EQ(shape_of(s, "encoder.layers.1.dense.fn.in_proj.weight"), (V{32, 16}));
  EXPECT_EQ(shape_of(s, "encoder.registers"), (V{none, 16}));
  EXPECT_EQ(shape_of(s, "encoder.out_proj.weight"), (V{none, 16}));
  EXPECT_EQ(shape_of(s, "pool_net.gate_nn.weight"), (V{none, none}));

  salt::testing::TempDir dir;
  const auto file = dir / "shapes" / "storeshapes";
  write_base_shapes(file, s);
  const auto text = salt::testing::read_file(file);
  EXPECT_EQ(text.rfind("# This is a base shape file encoded in yaml\n", 0), 0u);
  EXPECT_NE(text.find("encoder.layers.0.attn.fn.in_proj_weight:\n- 48\n- 16\n"), std::string::npos);
  EXPECT_NE(text.find("encoder.registers:\n- null\n- 16\n"), std::string::npos);
  EXPECT_EQ(read_base_shapes(file), s);
}

TEST(Mup, InitialisationIsSalts) {
  torch::manual_seed(0);
  auto m = make(256, true);
  auto p = m->model->named_parameters();
  const auto std_of = [&](const std::string& n) { return p[n].std().item<double>(); };
  // Dense and GLU: N(0, 1 / out_features), biases zero
  EXPECT_NEAR(std_of("init_nets.0.net.net.2.weight"), 1 / std::sqrt(256.0), 0.1 / std::sqrt(256.0));
  EXPECT_NEAR(std_of("encoder.layers.0.dense.fn.in_proj.weight"), 1 / std::sqrt(512.0), 0.1 / std::sqrt(512.0));
  EXPECT_EQ(p["encoder.layers.0.dense.fn.in_proj.bias"].abs().max().item<float>(), 0.0f);
  // Attention: q rows zero, k and v N(0, 1 / head_dim), out_proj N(0, 1 / D)
  const auto w = p["encoder.layers.0.attn.fn.in_proj_weight"];
  EXPECT_EQ(w.narrow(0, 0, 256).abs().max().item<float>(), 0.0f);
  EXPECT_NEAR(w.narrow(0, 256, 512).std().item<double>(), 1 / std::sqrt(64.0), 0.01);
  EXPECT_NEAR(std_of("encoder.layers.0.attn.fn.out_proj.weight"), 1 / std::sqrt(256.0), 0.1 / std::sqrt(256.0));
  // the readout (encoder.out_proj, salt's MuReadout) starts at zero
  EXPECT_EQ(p["encoder.out_proj.weight"].abs().max().item<float>(), 0.0f);
  EXPECT_DOUBLE_EQ(attention_scale(64, true), 1.0 / 64);
  EXPECT_DOUBLE_EQ(attention_scale(64, false), 1.0 / 8);
}

TEST(Mup, ApplyingTheShapesScalesBiasesAndTheReadoutAndGroupsTheMatrices) {
  torch::manual_seed(1);
  auto m = make(32, true);
  {  // non-zero readout and biases, to see the rescaling
    torch::NoGradGuard ng;
    m->model->encoder->out_proj->weight.fill_(1.0);
    m->model->encoder->out_proj->bias.fill_(1.0);
    m->model->encoder->layers->ptr(0)->named_parameters()["attn.fn.out_proj.bias"].fill_(1.0);
    m->model->pool_net->named_parameters()["gate_nn.bias"].fill_(1.0);
  }
  apply_base_shapes(*m, shapes_16_8(), "shapes");
  EXPECT_DOUBLE_EQ(m->model->encoder->out_proj_input_scale, 0.5);  // width 32 over base 16
  auto p = m->named_parameters();
  EXPECT_NEAR(p["model.encoder.out_proj.weight"][0][0].item<float>(), std::sqrt(2.0), 1e-6);
  EXPECT_NEAR(p["model.encoder.layers.0.attn.fn.out_proj.bias"][0].item<float>(), std::sqrt(2.0), 1e-6);  // fan-in width
  EXPECT_FLOAT_EQ(p["model.pool_net.gate_nn.bias"][0].item<float>(), 1.0f);  // fixed fan-in
  // MuAdamW's groups: two width dimensions only
  EXPECT_DOUBLE_EQ(m->mup_width_mults.at("model.encoder.layers.1.attn.fn.in_proj_weight"), 2.0);
  EXPECT_EQ(m->mup_width_mults.count("model.encoder.registers"), 0u);
  EXPECT_EQ(m->mup_width_mults.count("model.init_nets.0.net.net.2.weight"), 0u);

  // The optimizer: lr / 2 and weight decay * 2 for them, through the schedule.
  config::LrsConfig lrs;
  lrs.initial = lrs.max = lrs.end = 1e-3;
  lrs.pct_start = 0.1;
  lrs.weight_decay = 1e-5;
  training::Optimization opt(m->named_parameters(), training::OptimizerKind::kAdamW, lrs, 10, 0, m->mup_width_mults);
  const auto& groups = opt.optimizers()[0]->param_groups();
  ASSERT_EQ(groups.size(), 2u);
  auto lr = [&](size_t g) { return static_cast<const torch::optim::AdamWOptions&>(groups[g].options()).lr(); };
  auto wd = [&](size_t g) { return static_cast<const torch::optim::AdamWOptions&>(groups[g].options()).weight_decay(); };
  EXPECT_NEAR(lr(0), 5e-4, 1e-12);
  EXPECT_NEAR(wd(0), 2e-5, 1e-15);
  EXPECT_NEAR(lr(1), 1e-3, 1e-12);
  EXPECT_NEAR(wd(1), 1e-5, 1e-15);
  EXPECT_EQ(groups[0].params().size(), m->mup_width_mults.size());
  EXPECT_THROW(training::Optimization(m->named_parameters(), training::OptimizerKind::kLion, lrs, 10, 0, m->mup_width_mults),
               UsageError);
}

TEST(Mup, AShapesFileOfAnotherModelIsOneLine) {
  auto three = make(32, true, 3);
  const auto e = testing::usage_error_of([&] { apply_base_shapes(*three, shapes_16_8(2), "shape_mup/storeshapes"); });
  EXPECT_EQ(e, "model.mup_config: the base shapes in shape_mup/storeshapes do not match the model: no entry for the "
               "parameter 'encoder.layers.2.attn.fn.in_proj_weight' (written for another model? run salt mup again)");
  auto one = make(32, true, 1);
  EXPECT_NE(testing::usage_error_of([&] { apply_base_shapes(*one, shapes_16_8(2), "f"); }).find("'encoder.layers.1.attn.fn.in_proj_weight' is not a parameter of the model"),
            std::string::npos);
  // muP shapes on a model whose readout is not muP's: the encoder's out_proj goes
  // from the width to a fixed size as a plain Linear (mup's assert_hidden_size_inf)
  auto sp = make(32, false);
  EXPECT_NE(testing::usage_error_of([&] { apply_base_shapes(*sp, shapes_16_8(), "f"); }).find("'encoder.out_proj' goes from a width to a fixed size"),
            std::string::npos);
  salt::testing::TempDir dir;
  EXPECT_NE(testing::usage_error_of([&] { read_base_shapes(dir / "none" / "storeshapes"); }).find("no base shapes file"), std::string::npos);
  salt::testing::write_file(dir / "bad", "encoder.registers: 16\n");
  EXPECT_NE(testing::usage_error_of([&] { read_base_shapes(dir / "bad"); }).find("is not a list of dimensions"), std::string::npos);
  EXPECT_NE(testing::usage_error_of([&] { make_base_shapes(make(16, true, 2)->model->named_parameters(), make(8, true, 3)->model->named_parameters()); })
                .find("salt mup:"),
            std::string::npos);
}

// salt's coordinate check (muP_utils/functions_check_muP.py get_coord_data, after
// mup's coord_check): a fixed batch, Adam at a large learning rate, and the mean
// |activation| of the init net and every encoder layer after a few steps, at
// growing widths. Returns, per width, the largest change of a layer's mean
// |activation| from step 0 to step `steps`.
std::vector<double> coord_check(bool mup, const std::vector<int64_t>& widths, int steps) {
  const auto shapes = shapes_16_8();
  std::vector<double> out;
  for (auto w : widths) {
    torch::manual_seed(7);
    auto m = make(w, mup);
    if (mup) apply_base_shapes(*m, shapes, "shapes");
    torch::manual_seed(11);
    const int64_t B = 64, L = 6;
    TensorMap inputs{{"jets", torch::randn({B, 2})}, {"tracks", torch::randn({B, L, 5})}};
    TensorMap pads{{"tracks", torch::zeros({B, L}, torch::kBool)}};
    Labels labels{{"jets", {{"flavour_label", torch::randint(0, 4, {B}, torch::kLong)}}}};
    auto activations = [&] {  // the init net's output and each encoder layer's, padded layout
      torch::NoGradGuard ng;
      auto normed = m->norm->forward(inputs);
      InitNet net = m->model->init_net_list()[0];
      auto x = net->forward(normed);
      std::vector<torch::Tensor> acts{x};
      for (const auto& layer : *m->model->encoder->layers) {
        x = layer->as<EncoderLayerImpl>()->forward(x, pads.at("tracks"));
        acts.push_back(x);
      }
      return acts;
    };
    const auto before = activations();
    config::LrsConfig lrs;
    lrs.initial = lrs.max = lrs.end = 0.02;
    lrs.pct_start = 0.1;
    lrs.weight_decay = 0;
    training::Optimization opt(m->named_parameters(), training::OptimizerKind::kAdamW, lrs, steps + 1, 0,
                               m->mup_width_mults);
    m->train();
    for (int s = 0; s < steps; ++s) {
      opt.zero_grad();
      m->forward(inputs, pads, &labels).loss.backward();
      opt.step();
    }
    m->eval();
    const auto after = activations();
    double worst = 0;
    for (size_t i = 0; i < after.size(); ++i)
      worst = std::max(worst, (after[i] - before[i]).abs().mean().item<double>());
    out.push_back(worst);
  }
  return out;
}

TEST(Mup, CoordinateCheckKeepsActivationUpdatesFlatInWidth) {
  const std::vector<int64_t> widths{32, 64, 128, 256};
  const auto mup = coord_check(true, widths, 3);
  const auto sp = coord_check(false, widths, 3);
  std::string table;
  for (size_t i = 0; i < widths.size(); ++i)
    table += "width " + std::to_string(widths[i]) + ": muP " + std::to_string(mup[i]) + ", SP " + std::to_string(sp[i]) + "\n";
  // 8x the width: muP's activation updates stay within a factor 2, SP's grow more than 4x.
  EXPECT_LT(mup.back() / mup.front(), 2.0) << table;
  EXPECT_GT(mup.back() / mup.front(), 0.5) << table;
  EXPECT_GT(sp.back() / sp.front(), 4.0) << table;
  std::cout << table;
}

}  // namespace
}  // namespace salt::models
