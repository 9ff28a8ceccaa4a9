// Building from salt-style YAML: defaults, several constituent types, errors.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "models/model_test_helpers.h"

using namespace salt::models;
using namespace salt::models::testing;

namespace {

std::string error_of(const std::string& yaml, const ModelContext& ctx) {
  try {
    build(yaml, ctx);
  } catch (const salt::UsageError& e) {
    return e.what();
  }
  return "";
}

std::string replaced(std::string y, const std::string& a, const std::string& b) {
  auto pos = y.find(a);
  EXPECT_NE(pos, std::string::npos) << a;
  if (pos != std::string::npos) y.replace(pos, a.size(), b);
  return y;
}

// tracks + electrons, each with its own init net; one task per constituent type.
std::string two_inputs_yaml(bool electrons_first) {
  std::string tracks = R"(
    - input_name: tracks
      dense_config: { output_size: 8, hidden_layers: [8] })";
  std::string electrons = R"(
    - input_name: electrons
      dense_config: { output_size: 8 })";
  return std::string(R"(
class_path: salt.models.SaltModel
init_args:
  init_nets:)") + (electrons_first ? electrons + tracks : tracks + electrons) + R"(
  encoder:
    class_path: salt.models.TransformerV2
    init_args: { num_layers: 1, embed_dim: 8, attn_kwargs: { num_heads: 2 } }
  pool_net:
    class_path: salt.models.GlobalAttentionPooling
    init_args: { input_size: 8 }
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
        - class_path: salt.models.ClassificationTask
          init_args:
            name: electron_origin
            input_name: electrons
            label: ftagTruthOriginLabel
            loss: { class_path: torch.nn.CrossEntropyLoss, init_args: { weight: [1, 1, 1, 2, 2, 2, 1, 1] } }
            dense_config: { input_size: 8, output_size: 8, context_size: 8 }
)";
}

ModelContext two_input_context() {
  auto ctx = make_context(2, 5);
  ctx.variables["electrons"] = numbered("el_var", 3);
  ctx.norm["electrons"] = NormStats{{1, 2, 3}, {2, 2, 2}};
  return ctx;
}

}  // namespace

TEST(Factory, DerivesInputSizesLikeSalt) {
  auto model = build(small_gn2_yaml(), make_context(2, 19));
  EXPECT_EQ(model->model->init_net_list()[0]->net->input_size(), 21);  // 19 track + 2 jet vars
  auto no_global = replaced(small_gn2_yaml(), "    - input_name: tracks\n", "    - input_name: tracks\n      attach_global: false\n");
  EXPECT_EQ(build(no_global, make_context(2, 19))->model->init_net_list()[0]->net->input_size(), 19);
  EXPECT_EQ(model->model_name(), "GN2");
  EXPECT_EQ(model->loss_mode(), "wsum");
  // use_class_dict filled the CE weights from the context.
  EXPECT_TRUE(torch::equal(model->model->task_list()[0]->loss->weight, torch::tensor({1.0f, 2.0f, 0.5f, 3.0f})));
  // Salt's defaults: attn_type torch-math, GLU SiLU, one register, final norm.
  auto enc = build(two_inputs_yaml(false), two_input_context())->model->encoder;
  EXPECT_EQ(enc->options().attn_type(), "torch-math");
  EXPECT_EQ(enc->options().num_registers(), 1);
  EXPECT_TRUE(enc->options().do_final_norm());
  EXPECT_EQ(enc->options().dense_kwargs().activation(), "SiLU");
}

TEST(Factory, ShortAndLongLossFormsAreEqual) {
  auto a = build(kDIPSYaml, make_context(2, 21, "dips"));
  auto b = build(replaced(kDIPSYaml, "loss: torch.nn.CrossEntropyLoss", "loss: { class_path: torch.nn.CrossEntropyLoss }"),
                 make_context(2, 21, "dips"));
  EXPECT_EQ(a->model->task_list()[0]->loss->kind(), LossKind::CrossEntropy);
  EXPECT_EQ(b->model->task_list()[0]->loss->kind(), LossKind::CrossEntropy);
  EXPECT_EQ(a->model->task_list()[0]->loss->options().ignore_index(), -1);  // salt forces -1
}

TEST(Factory, SeveralConstituentTypesConcatInInitNetOrder) {
  auto ctx = two_input_context();
  for (bool electrons_first : {false, true}) {
    auto model = build(two_inputs_yaml(electrons_first), ctx);
    model->eval();
    torch::manual_seed(2);
    TensorMap inputs{{"jets", torch::randn({2, 2})}, {"tracks", torch::randn({2, 4, 5})}, {"electrons", torch::randn({2, 3, 3})}};
    TensorMap masks{{"tracks", torch::tensor({false, false, true, true, false, true, true, true}).view({2, 4})},
                    {"electrons", torch::tensor({false, true, true, true, true, true}).view({2, 3})}};
    auto out = model->forward(inputs, masks);
    std::vector<std::string> order;
    for (const auto& s : out.sequence.segments) order.push_back(s.name);
    const std::vector<std::string> expected =
        electrons_first ? std::vector<std::string>{"electrons", "tracks", "REGISTERS"}
                        : std::vector<std::string>{"tracks", "electrons", "REGISTERS"};
    EXPECT_EQ(order, expected);
    EXPECT_EQ(out.sequence.x.size(1), 4 + 3 + 1);
    EXPECT_EQ(out.preds["electrons"]["electron_origin"].sizes(), (std::vector<int64_t>{2, 3, 8}));
    // The electron slice really is the electrons: changing a padded electron changes nothing,
    // changing the valid one changes the electron output.
    auto changed = inputs;
    changed["electrons"] = inputs["electrons"].clone();
    changed["electrons"][0][2].fill_(5.0);
    auto same = model->forward(changed, masks);
    EXPECT_TRUE(torch::allclose(same.preds["jets"]["jets_classification"], out.preds["jets"]["jets_classification"], 1e-5, 1e-5));
    changed["electrons"][0][0].fill_(5.0);
    auto diff = model->forward(changed, masks);
    EXPECT_FALSE(torch::allclose(diff.preds["electrons"]["electron_origin"][0][0], out.preds["electrons"]["electron_origin"][0][0]));
  }
}

TEST(Factory, ErrorsNameTheKey) {
  auto ctx = make_context(2, 19);
  auto e = error_of(replaced(kGN2Yaml, "salt.models.Transformer", "salt.models.Perceiver"), ctx);
  EXPECT_NE(e.find("model.model.init_args.encoder.class_path"), std::string::npos) << e;
  EXPECT_NE(e.find("salt.models.Perceiver"), std::string::npos) << e;

  e = error_of(replaced(kGN2Yaml, "salt.models.VertexingTask", "salt.models.MaskFormerTask"), ctx);
  EXPECT_NE(e.find("tasks.init_args.modules[2].class_path"), std::string::npos) << e;

  e = error_of(replaced(kDIPSYaml, "torch.nn.CrossEntropyLoss", "torch.nn.HingeLoss"), make_context(2, 21));
  EXPECT_NE(e.find("unknown loss 'torch.nn.HingeLoss'"), std::string::npos) << e;

  e = error_of(replaced(kGN2Yaml, "num_heads: 8", "num_heads: 8\n        num_hedas: 2"), ctx);
  EXPECT_NE(e.find("attn_kwargs.num_hedas: unknown key"), std::string::npos) << e;

  e = error_of(replaced(kGN2Yaml, "num_layers: 4", "num_layers: four"), ctx);
  EXPECT_NE(e.find("num_layers: expected an integer, got 'four'"), std::string::npos) << e;

  e = error_of(replaced(kGN2Yaml, "activation: &activation ReLU", "activation: &activation Relu"), ctx);
  EXPECT_NE(e.find("unknown activation 'Relu'"), std::string::npos) << e;

  auto no_weights = ctx;
  no_weights.class_weights = nullptr;
  e = error_of(kGN2Yaml, no_weights);
  EXPECT_NE(e.find("use_class_dict"), std::string::npos) << e;

  e = error_of(replaced(kGN2Yaml, "output_size: 4", "output_size: 5"), ctx);
  EXPECT_NE(e.find("does not match number of class names"), std::string::npos) << e;

  e = error_of(replaced(kGN2Yaml, "input_size: 256", "input_size: 255"), ctx);
  EXPECT_NE(e.find("modules[2].init_args.dense_config.input_size"), std::string::npos) << e;

  e = error_of(replaced(kGN2Yaml, "class_path: salt.models.SaltModel", "class_path: salt.models.GN1"), ctx);
  EXPECT_NE(e.find("model.model.class_path"), std::string::npos) << e;

  auto gls = ctx;
  gls.loss_mode = "GLS";
  e = error_of(kGN2Yaml, gls);
  EXPECT_NE(e.find("GLS does not use task weights"), std::string::npos) << e;

  auto no_norm = ctx;
  no_norm.norm.erase("tracks");
  e = error_of(kGN2Yaml, no_norm);
  EXPECT_NE(e.find("no normalisation statistics for input 'tracks'"), std::string::npos) << e;

  e = error_of(replaced(kGN2Yaml, "do_final_norm: True", "do_final_norm: True\n      edge_embed_dim: 16"), ctx);
  EXPECT_NE(e.find("edge_embed_dim: 16 needs edge_init_nets (and data.edge_constructors)"), std::string::npos) << e;
}

TEST(Factory, ResolvedConfigExtrasAreAccepted) {
  // salt's written config.yaml carries variables/global_object in the init nets and
  // explicit defaults; they must not trip the reader.
  auto y = replaced(kGN2Yaml, "    - input_name: tracks\n",
                    "    - input_name: tracks\n      variables: {jets: [a, b]}\n      global_object: jets\n      "
                    "attach_global: true\n      pos_enc: null\n      mup: false\n      featurewise: null\n");
  y = replaced(y, "  pool_net:", "  edge_init_nets: null\n  mask_decoder: null\n  merge_dict: null\n  featurewise_nets: null\n  pool_net:");
  EXPECT_NO_THROW(build(y, make_context(2, 19)));
}
