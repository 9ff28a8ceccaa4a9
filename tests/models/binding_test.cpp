// The schema cannot drift from the options structs it binds: every TORCH_ARG of
// a model component's options (read from its header, as a reader of the code
// sees it) is a config key or set by the builder, its default in the header is
// the schema's default, and every key of every registered component is bound to
// a member or says why not (unsupported, no effect, or read elsewhere).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "config/schema.h"
#include "support/test_support.h"

using salt::config::Field;
using salt::config::Support;
using salt::config::Type;

namespace {

struct Arg {
  std::string name;
  std::string default_literal;  // empty: set by a constructor
};

// TORCH_ARG(type, name) [= default]; inside `struct <name> { ... };` of a header.
std::vector<Arg> torch_args(const std::string& header, const std::string& struct_name) {
  const auto text = salt::testing::read_file(salt::testing::source_dir() / "lib" / "models" / header);
  const auto start = text.find("struct " + struct_name + " {");
  EXPECT_NE(start, std::string::npos) << struct_name << " not in " << header;
  const auto body = text.substr(start, text.find("\n};", start) - start);
  std::vector<Arg> args;
  static const std::regex re(R"(TORCH_ARG\((.*),\s*(\w+)\)\s*(?:=\s*([^;]*))?;)");
  for (std::sregex_iterator it(body.begin(), body.end(), re), end; it != end; ++it)
    args.push_back({(*it)[2].str(), (*it)[3].str()});
  EXPECT_FALSE(args.empty()) << struct_name;
  return args;
}

const Type& struct_of(const Type& type) {
  if (type.kind == Type::Kind::kStruct) return type;
  if (type.kind == Type::Kind::kList) return struct_of(*type.elem);
  for (const auto& alt : type.alternatives)
    if (alt->kind == Type::Kind::kStruct) return *alt;
  ADD_FAILURE() << "no struct in " << type.describe();
  return type;
}

const Type& component(const std::string& class_path) {
  const auto* spec = salt::config::components().find(class_path);
  EXPECT_NE(spec, nullptr) << class_path;
  return *spec->init_args;
}

const Type& key_of(const Type& type, const std::string& key) {
  const auto* f = type.field(key);
  EXPECT_NE(f, nullptr) << key;
  return struct_of(*f->type);
}

// The header's literal and the schema's default denote the same value.
bool same_default(const std::string& literal, const YAML::Node& schema_default) {
  if (literal == "std::nullopt") return schema_default.IsNull();
  if (!schema_default.IsScalar()) return false;
  const auto& s = schema_default.Scalar();
  if (literal.size() >= 2 && literal.front() == '"') return literal.substr(1, literal.size() - 2) == s;
  if (literal == "true" || literal == "false") return literal == s;
  try {
    return std::stod(literal) == std::stod(s);
  } catch (const std::exception&) {
    return false;
  }
}

struct Case {
  std::string header, struct_name;
  const Type* schema;
  std::map<std::string, std::string> renamed;  // member -> key
  std::set<std::string> set_by_builder;        // members no key sets
};

std::vector<Case> cases() {
  const auto& model = component("salt.models.SaltModel");
  const auto& init_net = key_of(model, "init_nets");
  const auto& transformer = component("salt.models.Transformer");
  const auto& cls = component("salt.models.ClassificationTask");
  return {
      {"layers/dense.h", "DenseOptions", &key_of(init_net, "dense_config"), {}, {}},
      {"layers/init_net.h", "InitNetOptions", &init_net, {{"dense", "dense_config"}}, {}},
      {"layers/glu.h", "GLUOptions", &key_of(transformer, "dense_kwargs"), {}, {"embed_dim"}},
      {"layers/attention.h", "AttentionOptions", &key_of(transformer, "attn_kwargs"), {}, {"embed_dim", "attn_type"}},
      {"layers/transformer.h", "TransformerOptions", &transformer, {}, {}},
      {"layers/pooling.h", "GlobalAttentionPoolingOptions", &component("salt.models.GlobalAttentionPooling"), {}, {}},
      {"tasks/task.h", "TaskOptions", &cls, {{"dense", "dense_config"}}, {}},
      {"tasks/classification_task.h", "ClassificationOptions", &cls, {}, {}},
      {"tasks/regression_task.h", "RegressionOptions", &component("salt.models.RegressionTask"),
       {{"norm_mean", "norm_params"}, {"norm_std", "norm_params"}}, {"gaussian"}},
  };
}

}  // namespace

TEST(Binding, EveryOptionIsAKeyWithTheHeadersDefault) {
  for (const auto& c : cases()) {
    for (const auto& arg : torch_args(c.header, c.struct_name)) {
      if (c.set_by_builder.count(arg.name)) continue;
      auto it = c.renamed.find(arg.name);
      const auto key = it == c.renamed.end() ? arg.name : it->second;
      const Field* f = c.schema->field(key);
      ASSERT_NE(f, nullptr) << c.struct_name << "::" << arg.name << " has no config key '" << key << "'";
      // Nested options (`= GLUOptions()`) are checked as their own case.
      const bool literal = !arg.default_literal.empty() && arg.default_literal.find('(') == std::string::npos;
      if (it != c.renamed.end() || !literal || !f->bound || f->required()) continue;
      EXPECT_TRUE(same_default(arg.default_literal, f->default_value))
          << c.struct_name << "::" << arg.name << " defaults to " << arg.default_literal << " in " << c.header
          << " but the schema says " << YAML::Dump(f->default_value);
    }
  }
}

TEST(Binding, LossOptionsAreKeysOfSomeLoss) {
  std::set<std::string> keys;
  for (const auto* spec : salt::config::components().in_category("loss"))
    for (const auto& f : spec->init_args->fields) keys.insert(f.name);
  for (const auto& arg : torch_args("tasks/loss.h", "LossOptions"))
    if (arg.name != "kind") EXPECT_TRUE(keys.count(arg.name)) << "LossOptions::" << arg.name << " is no loss's key";
}

namespace {

void expect_accounted_for(const Type& type, const std::string& where) {
  if (type.kind == Type::Kind::kList || type.kind == Type::Kind::kDict) return expect_accounted_for(*type.elem, where);
  for (const auto& alt : type.alternatives) expect_accounted_for(*alt, where);
  for (const auto& f : type.fields) {
    EXPECT_TRUE(f.bound || f.support != Support::kFull || !f.note.empty())
        << where << "." << f.name << " is accepted, but nothing reads it and nothing says why";
    expect_accounted_for(*f.type, where + "." + f.name);
  }
}

}  // namespace

TEST(Binding, EveryModelKeyIsBoundOrSaysWhyNot) {
  int checked = 0;
  for (const auto& spec : salt::config::components().all()) {
    if (spec.category == "callback" || spec.category == "logger") continue;  // open or Lightning-only arguments
    expect_accounted_for(*spec.init_args, spec.class_path);
    ++checked;
  }
  EXPECT_GE(checked, 12);  // model, 2 encoders, pooling, task list, 4 tasks, 5 losses
}

TEST(Binding, ShortTorchNamesResolveThroughTheRegistry) {
  const auto& r = salt::config::components();
  ASSERT_NE(r.find("MSELoss"), nullptr);
  EXPECT_EQ(r.find("MSELoss")->class_path, "torch.nn.MSELoss");
  EXPECT_EQ(r.find("torch.nn.modules.loss.GaussianNLLLoss")->class_path, "torch.nn.GaussianNLLLoss");
  EXPECT_EQ(r.find("salt.models.task.ClassificationTask")->class_path, "salt.models.ClassificationTask");
  EXPECT_EQ(r.find("Transformer"), nullptr);  // only torch.nn classes have a short form
}

// Keys the module implemented but the schema used to refuse are reachable now.
#include "models/model_test_helpers.h"

TEST(Binding, QueryKeyAndValueNormsAreReachableFromAConfig) {
  using namespace salt::models;
  using namespace salt::models::testing;
  std::string y = small_gn2_yaml();
  const std::string heads = "num_heads: 2";
  y.replace(y.find(heads), heads.size(), "num_heads: 2\n        do_qk_norm: true\n        do_v_norm: true");
  auto model = build(y, make_context(2, 19));
  std::set<std::string> keys;
  for (const auto& p : model->named_parameters()) keys.insert(p.key());
  EXPECT_TRUE(keys.count("model.encoder.layers.0.attn.fn.q_norm.weight"));
  EXPECT_TRUE(keys.count("model.encoder.layers.0.attn.fn.k_norm.weight"));
  EXPECT_TRUE(keys.count("model.encoder.layers.0.attn.fn.v_norm.weight"));
  EXPECT_FALSE(build(small_gn2_yaml(), make_context(2, 19))->named_parameters().contains("model.encoder.layers.0.attn.fn.q_norm.weight"));
}

TEST(Binding, ShortLossNamesBuild) {
  using namespace salt::models;
  using namespace salt::models::testing;
  std::string y = kDIPSYaml;
  const std::string ce = "loss: torch.nn.CrossEntropyLoss";
  y.replace(y.find(ce), ce.size(), "loss: CrossEntropyLoss");
  EXPECT_EQ(build(y, make_context(2, 21, "dips"))->model->task_list()[0]->loss->kind(), LossKind::CrossEntropy);
}
