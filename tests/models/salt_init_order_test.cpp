// With salt's seed, salt-cpp's GN2, DIPS, DL1 and a FiLM model start from salt's initial weights
// bit for bit: every parameter's bit patterns, summed as integers, and its first and
// last values equal those of the same model rebuilt with Python torch in the order
// salt builds it (tests/models/reference/salt_init_order.py), and the generator is
// left where salt's is (the next randperm, which salt's batch order draws).
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "models/model_test_helpers.h"

using namespace salt::models;
using namespace salt::models::testing;

namespace {

struct Entry {
  int64_t numel = 0;
  int64_t checksum = 0;
  double first = 0, last = 0;
};

int64_t checksum(const torch::Tensor& t) {
  return t.detach().contiguous().view(torch::kInt32).to(torch::kInt64).sum().item<int64_t>();
}

// The reference's lines: {name: entry}, and the ten randperm values after the build.
std::pair<std::map<std::string, Entry>, std::string> salts_start(const std::string& model, int seed) {
  const auto script = salt::testing::read_file(salt::testing::source_dir() / "tests/models/reference/salt_init_order.py");
  const auto py = salt::testing::run_python(script, {model, std::to_string(seed)});
  EXPECT_EQ(py.exit_code, 0) << py.err;
  std::map<std::string, Entry> entries;
  std::string next;
  std::istringstream lines(py.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::string name;
    in >> name;
    if (name == "next") {
      std::getline(in, next);
      continue;
    }
    Entry e;
    in >> e.numel >> e.checksum >> e.first >> e.last;
    entries[name] = e;
  }
  return {entries, next};
}

std::string next_randperm() {
  std::ostringstream out;
  const auto p = torch::randperm(1000, torch::kLong).slice(0, 0, 10);
  for (int64_t i = 0; i < 10; ++i) out << " " << p[i].item<int64_t>();
  return out.str();
}

void expect_salts_start(const std::string& yaml, const ModelContext& ctx, const std::string& name, int seed) {
  SALT_REQUIRE(salt::testing::have_python_module("torch"), "Python torch (python3-torch)");
  const auto [expected, expected_next] = salts_start(name, seed);
  torch::manual_seed(seed);
  auto model = build(yaml, ctx);
  const auto next = next_randperm();
  auto params = model->named_parameters();
  EXPECT_EQ(params.size(), expected.size());
  for (const auto& p : params) {
    const auto it = expected.find(p.key());
    if (it == expected.end()) {
      ADD_FAILURE() << name << ": " << p.key() << " has no counterpart in salt's model";
      continue;
    }
    const auto flat = p.value().detach().flatten();
    EXPECT_EQ(flat.numel(), it->second.numel) << p.key();
    EXPECT_EQ(checksum(flat), it->second.checksum) << name << ": " << p.key() << " starts elsewhere than salt's";
    EXPECT_EQ(flat[0].item<float>(), static_cast<float>(it->second.first)) << p.key();
    EXPECT_EQ(flat[-1].item<float>(), static_cast<float>(it->second.last)) << p.key();
  }
  EXPECT_EQ(next, expected_next) << name << ": the generator is not where salt's build leaves it";
}

}  // namespace

TEST(SaltInit, GN2StartsFromSaltsWeights) { expect_salts_start(kGN2Yaml, make_context(2, 19), "gn2", 42); }

TEST(SaltInit, GN2WithAnotherSeed) { expect_salts_start(kGN2Yaml, make_context(2, 19), "gn2", 7); }

TEST(SaltInit, DIPSStartsFromSaltsWeights) {
  auto ctx = make_context(2, 21, "dips");
  ctx.class_names = nullptr;
  expect_salts_start(kDIPSYaml, ctx, "dips", 42);
}

TEST(SaltInit, DL1StartsFromSaltsWeights) {
  auto ctx = make_context(2, 0, "DL1");
  ctx.class_names = [](const std::string&, const std::string&) -> std::optional<std::vector<std::string>> {
    return std::vector<std::string>{"bjets", "cjets", "ujets"};
  };
  expect_salts_start(kDL1Yaml, ctx, "dl1", 42);
}

namespace {

// FiLM nets at every layer salt allows, in an order that shows salt's: an input
// entry replaced by a later one (its nets still draw), global before input, two
// init nets (one featurewise net each), encoder last.
const char* kFeaturewiseYaml = R"(
class_path: salt.models.SaltModel
init_args:
  init_nets:
    - input_name: tracks
      dense_config: { output_size: &e 8, hidden_layers: [8] }
    - input_name: flows
      dense_config: { output_size: *e, hidden_layers: [8] }
  featurewise_nets:
    - layer: input
      dense_config_bias: { hidden_layers: [3], output_size: 5 }
    - layer: global
      dense_config_scale: { hidden_layers: [2], output_size: 6 }
    - layer: input
      dense_config_scale: { hidden_layers: [4], output_size: 5 }
      dense_config_bias: { hidden_layers: [4], output_size: 5 }
    - layer: encoder
      apply_norm: true
      dense_config_bias: { output_size: *e }
  encoder:
    class_path: salt.models.Transformer
    init_args:
      num_layers: 2
      embed_dim: *e
      out_dim: 6
      attn_type: torch-math
      norm: LayerNorm
      do_final_norm: True
      dense_kwargs: { activation: ReLU, gated: False }
      attn_kwargs: { num_heads: 2 }
  pool_net: { class_path: salt.models.GlobalAttentionPooling, init_args: { input_size: 6 } }
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
            dense_config: { input_size: 6, output_size: 4, hidden_layers: [4] }
)";

}  // namespace

TEST(SaltInit, FeaturewiseNetsDrawInSaltsOrder) {
  auto ctx = make_context(2, 3, "film");
  ctx.variables["flows"] = {"pt", "eta", "energy"};
  ctx.norm["flows"] = NormStats{std::vector<float>(3, 0.0f), std::vector<float>(3, 1.0f)};
  ctx.variables["parameters"] = {"mass"};
  expect_salts_start(kFeaturewiseYaml, ctx, "featurewise", 42);
}
