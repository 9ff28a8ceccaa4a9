// Table-driven tests of salt's composition rules (reference §1): merge order,
// list replacement, +=, YAML-typed values, anchors and merge keys, class_path.
#include <gtest/gtest.h>

#include "config/config_test_util.h"
#include "config/tree_ops.h"
#include "config/yaml_load.h"
#include "config/yaml_util.h"

namespace salt::testing {
namespace {

struct RuleCase {
  std::string name;
  std::vector<std::pair<std::string, std::string>> files;  // file name -> content
  std::vector<std::string> args;                           // "{dir}" is replaced by the temp dir
  std::string path;                                        // dotted path to inspect in the composed tree
  std::string expected;                                    // flow YAML of the value there
};

YAML::Node at(YAML::Node node, const std::string& dotted) {
  if (dotted.empty()) return node;
  for (const auto& seg : config::split_path(dotted)) {
    if (node.IsSequence()) node.reset(node[std::stoul(seg)]);
    else node.reset(config::get(node, seg));
  }
  return node;
}

// gtest names the parameter in ctest's listing: the case's name, not its bytes.
void PrintTo(const RuleCase& c, std::ostream* os) { *os << c.name; }

class ComposeRule : public ::testing::TestWithParam<RuleCase> {};

TEST_P(ComposeRule, GivesExpectedValue) {
  const auto& c = GetParam();
  TempDir dir;
  for (const auto& [name, text] : c.files) write_file(dir / name, text);
  std::vector<std::string> args;
  for (auto a : c.args) {
    auto pos = a.find("{dir}");
    if (pos != std::string::npos) a.replace(pos, 5, dir.path().string());
    args.push_back(a);
  }
  auto composed = compose_args(args);
  EXPECT_EQ(yaml_of(at(composed.tree, c.path)), c.expected);
}

const char* kTransformer =
    "m:\n  class_path: salt.models.Transformer\n  init_args: {num_layers: 4, embed_dim: 8, out_dim: 4}\n";

INSTANTIATE_TEST_SUITE_P(
    Rules, ComposeRule,
    ::testing::Values(
        RuleCase{"MapsMergeRecursively",
                 {{"a.yaml", "t: {x: 1, y: {p: 1, q: 2}}\n"}, {"b.yaml", "t: {y: {q: 3}, z: 4}\n"}},
                 {"-c", "{dir}/a.yaml", "-c", "{dir}/b.yaml"}, "t", "{x: 1, y: {p: 1, q: 3}, z: 4}"},
        RuleCase{"ListsAreReplacedWhole",
                 {{"a.yaml", "l: [1, 2, 3]\n"}, {"b.yaml", "l: [9]\n"}},
                 {"-c", "{dir}/a.yaml", "-c", "{dir}/b.yaml"}, "l", "[9]"},
        RuleCase{"LaterConfigOverridesEarlierFlag",
                 {{"a.yaml", "t: {x: 1}\n"}},
                 {"--t.x=5", "-c", "{dir}/a.yaml"}, "t.x", "1"},
        RuleCase{"LaterFlagOverridesEarlierConfig",
                 {{"a.yaml", "t: {x: 1}\n"}},
                 {"-c", "{dir}/a.yaml", "--t.x=5"}, "t.x", "5"},
        RuleCase{"SpaceSeparatedFlagForm", {}, {"--t.x", "7"}, "t.x", "7"},
        RuleCase{"NegativeNumberIsAValue", {}, {"--t.x", "-1"}, "t.x", "-1"},
        RuleCase{"AppendToList", {{"a.yaml", "l: [1, 2]\n"}}, {"-c", "{dir}/a.yaml", "--l+=3"}, "l", "[1, 2, 3]"},
        RuleCase{"AppendCreatesList", {}, {"--l+=x"}, "l", "[x]"},
        RuleCase{"CliValueNull", {{"a.yaml", "t: {x: 1}\n"}}, {"-c", "{dir}/a.yaml", "--t.x=null"}, "t.x", "~"},
        RuleCase{"CliValueList", {}, {"--t.x=[1,2]"}, "t.x", "[1, 2]"},
        RuleCase{"CliValueMapMerges", {{"a.yaml", "t: {x: 1}\n"}}, {"-c", "{dir}/a.yaml", "--t={y: 2}"}, "t",
                 "{x: 1, y: 2}"},
        RuleCase{"CliValueFloat", {}, {"--t.x=1e-5"}, "t.x", "1e-5"},
        RuleCase{"AnchorsAndAliases", {{"a.yaml", "a: &v 3\nb: *v\n"}}, {"-c", "{dir}/a.yaml"}, "b", "3"},
        RuleCase{"MergeKeyExplicitKeysWin",
                 {{"a.yaml", "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 5\n"}},
                 {"-c", "{dir}/a.yaml"}, "d", "{y: 5, x: 1}"},
        RuleCase{"MergeKeyListOfMaps",
                 {{"a.yaml", "p: &p {x: 1}\nq: &q {x: 2, z: 3}\nd:\n  <<: [*p, *q]\n"}},
                 {"-c", "{dir}/a.yaml"}, "d", "{x: 1, z: 3}"},
        // PyYAML merges every `<<` of a mapping, a later one winning (before: only the last kept).
        RuleCase{"TwoMergeKeysMergeBothTheLaterWinning",
                 {{"a.yaml", "x: &a {p: 1, q: 1}\ny: &b {p: 2, r: 2}\nz:\n  <<: *a\n  <<: *b\n"}},
                 {"-c", "{dir}/a.yaml"}, "z", "{p: 2, r: 2, q: 1}"},
        RuleCase{"AliasesAreIndependentAfterOverride",
                 {{"a.yaml", "a: &v {x: 1}\nb: *v\n"}},
                 {"-c", "{dir}/a.yaml", "--b.x=2"}, "a.x", "1"},
        RuleCase{"SameClassMergesInitArgs",
                 {{"a.yaml", kTransformer}, {"b.yaml", "m:\n  class_path: salt.models.Transformer\n  init_args: {num_layers: 2}\n"}},
                 {"-c", "{dir}/a.yaml", "-c", "{dir}/b.yaml"}, "m",
                 "{class_path: salt.models.Transformer, init_args: {num_layers: 2, embed_dim: 8, out_dim: 4}}"},
        RuleCase{"DifferentClassKeepsOnlyAcceptedArgs",
                 {{"a.yaml", "m:\n  class_path: torch.nn.CrossEntropyLoss\n  init_args: {weight: [1, 2], label_smoothing: 0.1}\n"},
                  {"b.yaml", "m:\n  class_path: torch.nn.BCEWithLogitsLoss\n"}},
                 {"-c", "{dir}/a.yaml", "-c", "{dir}/b.yaml"}, "m",
                 "{class_path: torch.nn.BCEWithLogitsLoss, init_args: {weight: [1, 2]}}"},
        RuleCase{"ShortFormReplacesClass",
                 {{"a.yaml", "m:\n  class_path: torch.nn.CrossEntropyLoss\n  init_args: {label_smoothing: 0.1}\n"},
                  {"b.yaml", "m: torch.nn.MSELoss\n"}},
                 {"-c", "{dir}/a.yaml", "-c", "{dir}/b.yaml"}, "m",
                 "{class_path: torch.nn.MSELoss, init_args: {}}"},
        RuleCase{"ArgsOnlyMergeIntoCurrentClass",
                 {{"a.yaml", kTransformer}, {"b.yaml", "m: {num_layers: 6}\n"}},
                 {"-c", "{dir}/a.yaml", "-c", "{dir}/b.yaml"}, "m.init_args.num_layers", "6"},
        RuleCase{"FlagInsideComponentWithoutInitArgs", {{"a.yaml", kTransformer}},
                 {"-c", "{dir}/a.yaml", "--m.num_layers=2"}, "m.init_args.num_layers", "2"},
        RuleCase{"FlagInsideComponentWithInitArgs", {{"a.yaml", kTransformer}},
                 {"-c", "{dir}/a.yaml", "--m.init_args.num_layers=3"}, "m.init_args.num_layers", "3"},
        RuleCase{"FlagChangesClassByShortForm", {{"a.yaml", kTransformer}},
                 {"-c", "{dir}/a.yaml", "--m=salt.models.TransformerV2"}, "m.init_args",
                 "{num_layers: 4, embed_dim: 8, out_dim: 4}"},
        RuleCase{"ListIndexInFlag", {{"a.yaml", "l: [{w: 1}, {w: 2}]\n"}},
                 {"-c", "{dir}/a.yaml", "--l.1.w=5"}, "l", "[{w: 1}, {w: 5}]"},
        RuleCase{"FlagsForTopLevelKeys", {}, {"-n", "myrun", "-f", "-oc", "-ls", "sfx", "--seed_everything", "7"}, "",
                 "{name: myrun, force: true, overwrite_config: true, log_suffix: sfx, seed_everything: 7}"}),
    [](const ::testing::TestParamInfo<RuleCase>& info) { return info.param.name; });

// MaskFormer's null object class is a `null:` key; the run's config.yaml keeps it
// `null:` (PyYAML reads None, which salt renames "null"), not `"":` (salt: "Null
// class must be present in object_classes").
TEST(YamlKeys, ANullKeyStaysNullInTheWrittenConfig) {
  const auto text = config::to_yaml(resolve_args({"-c", repo_config("MaskFormer.yaml")}).config);
  const auto classes = text.find("object_classes:", text.find("mf_config:"));
  ASSERT_NE(classes, std::string::npos);
  const auto block = text.substr(classes, text.find("max_objects", classes) - classes);
  EXPECT_NE(block.find("\n        null:\n"), std::string::npos) << block;
  EXPECT_EQ(block.find("\"\":"), std::string::npos) << block;
  // and salt-cpp reads its own output back to the same classes
  EXPECT_EQ(config::to_yaml(config::load_yaml_string(text, "config.yaml").root), text);
}

// An overlay's null key replaces the base's (one entry, the overlay's value), as
// PyYAML + jsonargparse merge the two configs' None keys.
TEST(YamlKeys, AnOverlaysNullKeyReplacesTheBasesOne) {
  TempDir dir;
  write_file(dir / "overlay.yaml", R"(data:
  mf_config:
    object:
      object_classes:
        ~:
          raw: -7
          mapped: 2
)");
  const auto text =
      config::to_yaml(resolve_args({"-c", repo_config("MaskFormer.yaml"), "-c", (dir / "overlay.yaml").string()}).config);
  const auto classes = text.find("object_classes:", text.find("mf_config:"));
  const auto block = text.substr(classes, text.find("max_objects", classes) - classes);
  EXPECT_EQ(block.find("null:"), block.rfind("null:")) << block;  // one null class
  EXPECT_NE(block.find("null:\n          raw: -7\n          mapped: 2"), std::string::npos) << block;
}

// YAML's core tags: `!!str` makes a string of what looks like a number (as a quoted
// value, as in PyYAML); `!!int` is what the value already is.
TEST(YamlTags, CoreStrTagQuotesAndIntTagIsPlain) {
  const auto loaded = config::load_yaml_string("t: {n: !!str 123, m: !!int 7, q: '8'}\n", "tags.yaml");
  const auto t = config::get(loaded.root, "t");
  EXPECT_TRUE(config::is_quoted(config::get(t, "n")));
  EXPECT_EQ(config::get(t, "n").Scalar(), "123");
  EXPECT_FALSE(config::is_quoted(config::get(t, "m")));
  EXPECT_TRUE(config::is_quoted(config::get(t, "q")));
}

// A command-line value is what the shell passed: a '#' after a space is no YAML
// comment there, and a newline in a path is not folded away (before: `logs #1`
// became `logs`, `#run` null, and `a<newline>b.h5` `a b.h5`, silently).
TEST(CliValue, HashAndNewlineStayInTheValue) {
  for (const std::string text : {"logs #1", "#run", "a\nb.h5", "x\r\ny", "a #b #c"}) {
    const auto node = config::parse_cli_value(text);
    ASSERT_TRUE(node.IsScalar()) << text;
    EXPECT_EQ(node.Scalar(), text);
  }
  // Quoted, the YAML value; a '#' inside a word was never a comment; the rest as before.
  EXPECT_EQ(config::parse_cli_value("'quoted # here'").Scalar(), "quoted # here");
  EXPECT_EQ(config::parse_cli_value("a#b").Scalar(), "a#b");
  EXPECT_EQ(config::parse_cli_value("5").as<int>(), 5);
  EXPECT_TRUE(config::parse_cli_value("null").IsNull());
  EXPECT_TRUE(config::parse_cli_value("[1, 2]").IsSequence());
}

}  // namespace
}  // namespace salt::testing
