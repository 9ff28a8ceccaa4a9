// Shared fixtures for the model tests: salt's GN2 / DIPS / DL1 `model.model`
// sections as YAML (same structure as salt/configs/GN2/GN2.yaml and
// configs/legacy/{dips,DL1}.yaml, anchors and merge keys included), their data
// variables, and tiny random batches.
#pragma once
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <functional>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.h"
#include "data/batch.h"
#include "models/layers/dense.h"
#include "models/model_factory.h"
#include "models/tasks/task.h"
#include "support/test_support.h"

namespace salt::models::testing {

// Every parameter set to 0.3 sin(0.7 i + 0.13 h), h the sum of its name's characters
// mod 97: the value the Python references' fill(name, shape) gives it
// (tests/models/reference/encoder_blocks_reference.py, encoder_dropout_test.cpp).
inline void fill_by_name(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.named_parameters()) {
    int h = 0;
    for (char c : p.key()) h += c;
    h %= 97;
    auto i = torch::arange(p.value().numel(), torch::kFloat64);
    p.value().copy_((0.3 * torch::sin(0.7 * i + 0.13 * h)).to(torch::kFloat32).view(p.value().sizes()));
  }
}

// A one-Linear Dense set to the identity, so a task's predictions are its inputs.
inline DenseOptions identity_dense(int64_t n) {
  return DenseOptions(n).hidden_layers(std::vector<int64_t>{}).output_size(n);
}
inline void make_identity(TaskImpl& task) {
  torch::NoGradGuard ng;
  for (auto& p : task.net->named_parameters()) {
    if (p.key().find("weight") != std::string::npos) p.value().copy_(torch::eye(p.value().size(0)));
    else p.value().zero_();
  }
}

// tests/fixtures/GN2_model.yaml, as text (tests edit it as text).
inline const std::string kGN2Yaml = salt::testing::read_file(salt::testing::source_dir() / "tests" / "fixtures" / "GN2_model.yaml");

inline const char* kDIPSYaml = R"(
class_path: salt.models.SaltModel
init_args:
  init_nets:
    - input_name: tracks
      dense_config:
        input_size: 23
        output_size: &embed_dim 128
        hidden_layers: [256]
        activation: &activation SiLU
  pool_net:
    class_path: salt.models.GlobalAttentionPooling
    init_args: { input_size: *embed_dim }
  tasks:
    class_path: torch.nn.ModuleList
    init_args:
      modules:
        - class_path: salt.models.ClassificationTask
          init_args:
            name: jets_classification
            input_name: jets
            label: HadronConeExclTruthLabelID
            label_map: { 0: 0, 4: 1, 5: 2 }
            class_names: [ujets, cjets, bjets]
            loss: torch.nn.CrossEntropyLoss
            dense_config:
              input_size: *embed_dim
              output_size: 3
              hidden_layers: [128, 64, 32]
              activation: *activation
              dropout: 0.1
)";

inline const char* kDL1Yaml = R"(
class_path: salt.models.SaltModel
init_args:
  init_nets:
    - input_name: jets
      attach_global: false
      dense_config:
        input_size: 2
        hidden_layers: [128, 128, 128]
        output_size: 64
        activation: &activation Mish
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
            dense_config:
              input_size: 64
              output_size: 3
              hidden_layers: [128]
              activation: *activation
)";

// Tensors for a Python reference script: one line "name|d0 d1 ...|v0 v1 ..." each,
// values at full double precision (the scripts parse them back with the shapes).
inline void dump_tensor(std::ostream& out, const std::string& name, const torch::Tensor& t) {
  out << name << "|";
  for (auto s : t.sizes()) out << s << " ";
  out << "|";
  auto flat = t.detach().to(torch::kDouble).contiguous().flatten();
  out.precision(17);
  for (int64_t i = 0; i < flat.numel(); ++i) out << flat[i].item<double>() << " ";
  out << "\n";
}

// The start of a Python reference script: reads a file of dump_tensor lines into the dict P,
// in float64 so the reference does not share the C++ side's rounding.
inline const char* kPythonTensorLoader = R"(
import sys, math, torch
import torch.nn.functional as F
torch.set_default_dtype(torch.float64)
P = {}
for line in open(sys.argv[1]):
    name, shape, values = line.split("|")
    shape = [int(s) for s in shape.split()]
    P[name] = torch.tensor([float(v) for v in values.split()]).reshape(shape)
)";

// The numbers of one line of a reference script's output.
inline std::vector<double> numbers_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<double> v;
  for (double d; in >> d;) v.push_back(d);
  return v;
}

// The UsageError `f` throws, "(accepted)" when it throws none.
inline std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

inline std::vector<std::string> numbered(const std::string& prefix, int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

// A context with `n_jet` jet and `n_track` track variables, unit norm stats
// (mean 0, std 1 unless given), GN2's class weights and flavour names.
inline ModelContext make_context(int n_jet, int n_track, const std::string& name = "GN2") {
  ModelContext ctx;
  ctx.variables["jets"] = numbered("jet_var", n_jet);
  if (n_track > 0) ctx.variables["tracks"] = numbered("trk_var", n_track);
  for (const auto& [input, vars] : ctx.variables)
    ctx.norm[input] = NormStats{std::vector<float>(vars.size(), 0.0f), std::vector<float>(vars.size(), 1.0f)};
  ctx.class_weights = [](const std::string& input, const std::string& label) -> std::optional<std::vector<float>> {
    if (input == "jets" && label == "flavour_label") return std::vector<float>{1.0f, 2.0f, 0.5f, 3.0f};
    if (input == "tracks" && label == "ftagTruthOriginLabel")
      return std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1};
    return std::nullopt;
  };
  ctx.class_names = [](const std::string& input, const std::string& label) -> std::optional<std::vector<std::string>> {
    if (input == "jets" && label == "flavour_label") return std::vector<std::string>{"bjets", "cjets", "ujets", "taujets"};
    return std::nullopt;
  };
  ctx.name = name;
  return ctx;
}

inline SaltWrapper build(const std::string& yaml, const ModelContext& ctx) {
  return build_model(YAML::Load(yaml), ctx);
}

// A small GN2-shaped model (same structure, small dims) for behaviour tests.
inline std::string small_gn2_yaml(int registers = 1, const std::string& attn_type = "torch-math") {
  std::string y = kGN2Yaml;
  auto replace = [&](const std::string& a, const std::string& b) {
    auto pos = y.find(a);
    if (pos != std::string::npos) y.replace(pos, a.size(), b);
  };
  replace("&embed_dim 256", "&embed_dim 16");
  replace("hidden_layers: [256]", "hidden_layers: [16]");
  replace("num_layers: 4", "num_layers: 2");
  replace("&out_dim 128", "&out_dim 8");
  replace("attn_type: flash-varlen", "attn_type: " + attn_type + "\n      num_registers: " + std::to_string(registers));
  replace("num_heads: 8", "num_heads: 2");
  replace("hidden_layers: [128, 64, 32]", "hidden_layers: [8]");
  replace("input_size: 256", "input_size: 16");
  return y;
}

struct ToyBatch {
  TensorMap inputs, pad_masks;
  Labels labels;
};

// Random jets with n_valid[b] valid tracks (a prefix) out of `length`.
inline ToyBatch toy_batch(const std::vector<int64_t>& n_valid, int64_t length, int n_jet = 2, int n_track = 19,
                          uint64_t seed = 1) {
  torch::manual_seed(seed);
  const auto b = static_cast<int64_t>(n_valid.size());
  ToyBatch t;
  t.inputs["jets"] = torch::randn({b, n_jet});
  auto tracks = torch::randn({b, length, n_track});
  auto mask = torch::ones({b, length}, torch::kBool);
  for (int64_t i = 0; i < b; ++i) mask[i].narrow(0, 0, n_valid[i]).fill_(false);
  tracks.masked_fill_(mask.unsqueeze(-1), 0.0);
  t.inputs["tracks"] = tracks;
  t.pad_masks["tracks"] = mask;
  t.labels["jets"]["flavour_label"] = torch::randint(0, 4, {b}, torch::kLong);
  t.labels["tracks"]["ftagTruthOriginLabel"] = torch::randint(0, 8, {b, length}, torch::kLong);
  t.labels["tracks"]["ftagTruthVertexIndex"] = torch::randint(-1, 3, {b, length}, torch::kLong);
  return t;
}

// The toy batch as the loader hands one over (for batch_to_device).
inline salt::Batch as_batch(const ToyBatch& t) {
  salt::Batch b;
  b.inputs = t.inputs;
  b.pad_masks = t.pad_masks;
  b.labels = t.labels;
  b.size = t.inputs.at("jets").size(0);
  return b;
}

// a and b of one shape, equal to `tol` (absolute and relative); `what` names them.
inline void expect_close(const torch::Tensor& a, const torch::Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_TRUE(torch::allclose(a, b, tol, tol)) << what << ": max diff " << (a - b).abs().max().item<double>();
}

// Jets with n_valid[b] valid tracks at shuffled slots, and NaN at the padded slots,
// as the loader fills them: a padding row that read one would spoil everything.
inline ToyBatch nan_padded_batch(const std::vector<int64_t>& n_valid, int64_t length, uint64_t seed) {
  auto t = toy_batch(n_valid, length, 2, 19, seed);
  auto mask = t.pad_masks["tracks"].clone();
  for (int64_t i = 0; i < mask.size(0); ++i) mask[i] = mask[i].index_select(0, torch::randperm(length));
  t.pad_masks["tracks"] = mask;
  t.inputs["tracks"] = torch::randn_like(t.inputs["tracks"]).masked_fill(mask.unsqueeze(-1),
                                                                         std::numeric_limits<float>::quiet_NaN());
  return t;
}

}  // namespace salt::models::testing
