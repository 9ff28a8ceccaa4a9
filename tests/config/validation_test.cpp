// The schema: defaults made explicit, types checked, and errors that name the
// key, the file and line (or the command-line token), with a did-you-mean.
#include <gtest/gtest.h>

#include <filesystem>

#include "config/config_test_util.h"
#include "config/run_config.h"
#include "config/yaml_util.h"
#include "core/errors.h"

namespace salt::testing {
namespace {

std::string error_of(const std::vector<std::string>& args, const std::string& base = repo_config("base.yaml")) {
  try {
    resolve_args(args, base);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "<no error>";
}

const std::vector<std::string> kGN2{"-c", repo_config("GN2.yaml")};

std::vector<std::string> gn2_with(std::vector<std::string> extra) {
  auto args = kGN2;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(Validation, FillsEveryDefault) {
  auto r = resolve_args(kGN2);
  EXPECT_EQ(r.config["trainer"]["max_steps"].as<int>(), -1);
  EXPECT_EQ(r.config["trainer"]["accumulate_grad_batches"].as<int>(), 1);
  EXPECT_EQ(r.config["data"]["prefetch_factor"].as<int>(), 2);
  auto tasks = r.config["model"]["model"]["init_args"]["tasks"]["init_args"]["modules"];
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[0]["init_args"]["loss"]["init_args"]["ignore_index"].as<int>(), -100);
  EXPECT_EQ(tasks[0]["init_args"]["weight"].Scalar(), "1.0");
  EXPECT_EQ(r.config["model"]["model"]["init_args"]["encoder"]["init_args"]["num_registers"].as<int>(), 1);
}

TEST(Validation, LinksNameAndGlobalObjectIntoModel) {
  auto r = resolve_args(gn2_with({"-n", "mytagger", "--data.global_object=jets"}));
  EXPECT_EQ(r.config["model"]["name"].Scalar(), "mytagger");
  EXPECT_EQ(r.config["model"]["global_object"].Scalar(), "jets");
}

TEST(Validation, RelativePathsResolveAgainstWorkingDirectory) {
  auto r = resolve_args(gn2_with({"--data.train_file=some/dir/train.h5"}));
  auto expected = (std::filesystem::current_path() / "some/dir/train.h5").string();
  EXPECT_EQ(r.config["data"]["train_file"].Scalar(), expected);
}

TEST(Validation, SeedEverythingIntOrBool) {
  EXPECT_EQ(resolve_args(gn2_with({"--seed_everything=true"})).config["seed_everything"].Scalar(), "true");
  EXPECT_EQ(resolve_args(gn2_with({"--seed_everything=3"})).config["seed_everything"].Scalar(), "3");
  EXPECT_NE(error_of(gn2_with({"--seed_everything=abc"})).find("expected int | bool"), std::string::npos);
}

// salt saves lrs_config as a mapping of floats (`last_epoch: -1.0` in its
// config.yaml) and passes int(last_epoch) to OneCycleLR.
TEST(Validation, LastEpochTakesSaltsWholeFloats) {
  auto read = [](const std::string& value) {
    return config::read_run_config(resolve_args(gn2_with({"--model.lrs_config.last_epoch=" + value})).config)
        .model.lrs.last_epoch;
  };
  EXPECT_EQ(read("-1.0"), -1);
  EXPECT_EQ(read("40"), 40);
  try {
    read("2.5");
    ADD_FAILURE() << "2.5 was read";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'model.lrs_config.last_epoch': expected a whole number, got '2.5'"),
              std::string::npos) << e.what();
  }
}

// salt types mf_config.constituent as an object config, so its saved config.yaml
// lists every object key there (at its default); salt-cpp reads them and uses
// name and id_label, as salt does.
TEST(Validation, MaskFormerConstituentTakesTheObjectKeysSaltWrites) {
  TempDir dir;
  write_file(dir / "constituent.yaml", R"(data:
  mf_config:
    constituent:
      name: tracks
      id_label: ftagTruthParentBarcode
      class_label: null
      object_classes: null
      max_lxy_mm: null
      lxy_field: Lxy
      cuts: null
      sort_by: null
      sort_descending: true
      pv_class: 0
      max_objects: null
      num_objects: null
)");
  const auto r = resolve_args({"-c", repo_config("MaskFormer.yaml"), "-c", (dir / "constituent.yaml").string()});
  const auto mf = config::read_run_config(r.config).data.mf_config;
  ASSERT_TRUE(mf.has_value());
  EXPECT_EQ(mf->constituent.name, "tracks");
  EXPECT_EQ(mf->constituent.id_label, "ftagTruthParentBarcode");
}

TEST(Validation, DevicesIntListOrAuto) {
  EXPECT_EQ(yaml_of(resolve_args(gn2_with({"--trainer.devices=[0,1]"})).config["trainer"]["devices"]), "[0, 1]");
  EXPECT_EQ(resolve_args(gn2_with({"--trainer.devices=2"})).config["trainer"]["devices"].Scalar(), "2");
}

struct ErrorCase {
  std::string name;
  std::string file_text;               // written as bad.yaml (empty: none)
  std::vector<std::string> extra_args; // after -c GN2.yaml [-c bad.yaml]
  std::vector<std::string> expected;   // substrings of the message
};

// gtest names the parameter in ctest's listing: the case's name, not its bytes.
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class ConfigError : public ::testing::TestWithParam<ErrorCase> {};

// data.labels with n keys (a mapping yaml-cpp searches key by key).
std::string many_keys(int n) {
  std::string text = "data:\n  labels:\n";
  for (int i = 0; i < n; ++i) text += "    k" + std::to_string(i) + ": [a]\n";
  return text;
}

TEST_P(ConfigError, OneLineNamingKeyAndPlace) {
  const auto& c = GetParam();
  TempDir dir;
  auto args = kGN2;
  auto bad = (dir / "bad.yaml").string();
  if (!c.file_text.empty()) {
    write_file(bad, c.file_text);
    args.push_back("-c");
    args.push_back(bad);
  }
  for (auto a : c.extra_args) {
    auto pos = a.find("{bad}");
    if (pos != std::string::npos) a.replace(pos, 5, bad);
    args.push_back(a);
  }
  auto message = error_of(args);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  for (auto e : c.expected) {
    auto pos = e.find("{bad}");
    if (pos != std::string::npos) e.replace(pos, 5, bad);
    EXPECT_NE(message.find(e), std::string::npos) << "missing '" << e << "' in: " << message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Errors, ConfigError,
    ::testing::Values(
        ErrorCase{"UnknownKeyInFile", "trainer:\n  max_epoch: 3\n", {},
                  {"{bad}:2", "'trainer.max_epoch'", "unknown key", "did you mean 'max_epochs'?"}},
        ErrorCase{"UnknownKeyOnCommandLine", "", {"--data.batch_sise=10"},
                  {"command line '--data.batch_sise=10'", "unknown key", "did you mean 'batch_size'?"}},
        ErrorCase{"UnknownTopLevelKey", "", {"--traner.max_epochs", "3"},
                  {"command line '--traner.max_epochs 3'", "did you mean 'trainer'?"}},
        ErrorCase{"WrongTypeInFile", "data:\n  batch_size: lots\n", {},
                  {"{bad}:2", "'data.batch_size'", "expected an integer, got 'lots'"}},
        ErrorCase{"WrongTypeOnCommandLine", "", {"--trainer.max_epochs=ten"},
                  {"command line '--trainer.max_epochs=ten'", "expected an integer"}},
        ErrorCase{"BadChoiceWithSuggestion", "", {"--model.loss_mode=wsun"},
                  {"'model.loss_mode'", "expected one of {wsum,GLS}", "did you mean 'wsum'?"}},
        ErrorCase{"BadActivation", "", {"--model.model.encoder.dense_kwargs.activation=Relu"},
                  {"did you mean 'ReLU'?"}},
        ErrorCase{"MissingRequiredKey", "", {"--model.model.init_args.encoder.init_args={num_layers: null}"},
                  {"expected an integer"}},
        ErrorCase{"MissingRequiredInitArg", "",
                  {"--model.model.init_args.pool_net=null", "--model.model.init_args.pool_net=salt.models.GlobalAttentionPooling"},
                  {"command line '--model.model.init_args.pool_net=salt.models.GlobalAttentionPooling'",
                   "'model.model.init_args.pool_net.init_args'", "missing required key 'input_size'"}},
        ErrorCase{"UnknownClassPath", "",
                  {"--model.model.init_args.encoder.class_path=salt.models.Transfomer"},
                  {"unknown class_path 'salt.models.Transfomer'", "did you mean 'salt.models.Transformer'?"}},
        ErrorCase{"ClassOfWrongCategory", "", {"--model.model.init_args.pool_net=salt.models.Transformer"},
                  {"is a encoder, but a pooling is needed here", "salt.models.GlobalAttentionPooling"}},
        ErrorCase{"UnsupportedKeyIsAnError", "", {"--data.config_s3={bucket: a}"},
                  {"'data.config_s3'", "is not supported", "read files from a file system"}},
        ErrorCase{"BadYaml", "trainer:\n  max_epochs: [1, 2\n", {}, {"{bad}:", "invalid YAML"}},
        ErrorCase{"MissingFile", "", {"-c", "/nonexistent/dir/cfg.yaml"}, {"/nonexistent/dir/cfg.yaml: no such config file"}},
        ErrorCase{"ConfigNotAMapping", "- 1\n- 2\n", {}, {"{bad}:1", "must be a mapping"}},
        ErrorCase{"MissingFlagValue", "", {"--config"}, {"'--config'", "needs a value"}},
        ErrorCase{"DottedFlagWithoutValue", "", {"--trainer.max_epochs"}, {"'--trainer.max_epochs'", "needs a value"}},
        ErrorCase{"UnexpectedPositional", "", {"oops"}, {"'oops'", "unexpected argument"}},
        ErrorCase{"AppendToNonList", "", {"--trainer.max_epochs+=3"}, {"is not a list"}},
        ErrorCase{"BadListIndex", "", {"--model.model.init_args.init_nets.5.input_name=x"}, {"not a valid index"}},
        // Values the code divides by or loops over: refused before anything runs.
        ErrorCase{"ZeroLogInterval", "", {"--trainer.log_every_n_steps=0"},
                  {"'trainer.log_every_n_steps'", "must be >= 1, got '0'"}},
        ErrorCase{"ZeroValInterval", "trainer:\n  check_val_every_n_epoch: 0\n", {},
                  {"{bad}:2", "'trainer.check_val_every_n_epoch'", "must be >= 1"}},
        ErrorCase{"ZeroBatchSize", "", {"--data.batch_size=0"}, {"'data.batch_size'", "must be >= 1"}},
        ErrorCase{"NegativeWorkers", "", {"--data.num_workers=-1"}, {"'data.num_workers'", "must be >= 0"}},
        ErrorCase{"ZeroPrefetch", "", {"--data.prefetch_factor=0"}, {"'data.prefetch_factor'", "must be >= 1"}},
        ErrorCase{"NegativeWeightDecay", "", {"--model.lrs_config.weight_decay=-1"},
                  {"'model.lrs_config.weight_decay'", "must be >= 0"}},
        ErrorCase{"NegativeClipInUnion", "", {"--trainer.gradient_clip_val=-0.5"},
                  {"'trainer.gradient_clip_val'", "must be >= 0, got '-0.5'"}},
        ErrorCase{"ZeroNodes", "", {"--trainer.num_nodes=0"}, {"'trainer.num_nodes'", "must be >= 1"}},
        ErrorCase{"NumTrainBelowAll", "", {"--data.num_train=-5"}, {"'data.num_train'", "must be >= -1"}},
        // Before: accepted, then 'val/loss is not finite' at the end of the first epoch.
        ErrorCase{"InfiniteLearningRate", "", {"--model.lrs_config.max=.inf"},
                  {"'model.lrs_config.max'", "must be a finite number >= 0, got '.inf'"}},
        ErrorCase{"NanDropPath", "", {"--model.model.init_args.encoder.init_args.drop_path=.nan"},
                  {"'model.model.init_args.encoder.init_args.drop_path'", "must be a finite number in [0, 1], got '.nan'"}},
        // Model sizes and rates: before, LibTorch's own words ("from is out of bounds for
        // float", "dropout probability has to be between 0 and 1") naming no key, or a
        // NaN LayerScale that ended the run as a non-finite loss.
        ErrorCase{"ZeroEmbedDim", "", {"--model.model.encoder.embed_dim=0"},
                  {"'model.model.init_args.encoder.init_args.embed_dim'", "must be >= 1, got '0'"}},
        ErrorCase{"NegativeOutDim", "", {"--model.model.encoder.out_dim=-3"},
                  {"'model.model.init_args.encoder.init_args.out_dim'", "must be >= 1, got '-3'"}},
        ErrorCase{"ZeroHiddenLayer", "", {"--model.model.init_args.init_nets.0.dense_config.hidden_layers=[64, 0]"},
                  {"'model.model.init_args.init_nets.0.dense_config.hidden_layers", "must be >= 1, got '0'"}},
        ErrorCase{"ZeroHeads", "", {"--model.model.encoder.attn_kwargs.num_heads=0"},
                  {"'model.model.init_args.encoder.init_args.attn_kwargs.num_heads'", "must be >= 1"}},
        ErrorCase{"DropoutAboveOne", "", {"--model.model.encoder.dense_kwargs.dropout=2"},
                  {"'model.model.init_args.encoder.init_args.dense_kwargs.dropout'", "must be in [0, 1], got '2'"}},
        ErrorCase{"NegativeDenseDropout", "", {"--model.model.init_args.init_nets.0.dense_config.dropout=-0.1"},
                  {"dense_config.dropout'", "must be in [0, 1], got '-0.1'"}},
        ErrorCase{"NanLayerScale", "", {"--model.model.encoder.ls_init=.nan"},
                  {"'model.model.init_args.encoder.init_args.ls_init'", "must be a finite number, got '.nan'"}},
        ErrorCase{"InfiniteUnboundedFloat", "", {"--model.model.init_args.tasks.init_args.modules.0.init_args.weight=-.inf"},
                  {"weight'", "must be a finite number, got '-.inf'"}},
        // Before: the last of two equal keys won silently (a second `trainer:` block
        // replaced the first whole), and unknown tags were read as if absent.
        ErrorCase{"DuplicateKey", "trainer:\n  max_epochs: 3\n  max_epochs: 4\n", {},
                  {"{bad}:3", "'trainer.max_epochs' is given twice in one mapping (first at line 2)", "remove one"}},
        ErrorCase{"DuplicateBlock", "trainer:\n  max_epochs: 3\ndata:\n  batch_size: 5\ntrainer:\n  devices: 1\n", {},
                  {"{bad}:5", "'trainer' is given twice in one mapping (first at line 1)"}},
        // Before: the first document kept and the second dropped without a word
        // (PyYAML's safe_load, salt's reader, refuses a second document).
        ErrorCase{"TwoDocuments", "trainer:\n  max_epochs: 3\n---\ntrainer:\n  max_epochs: 4\n", {},
                  {"{bad}:4", "a second YAML document ('---')", "PyYAML's safe_load"}},
        ErrorCase{"AnEmptySecondDocument", "trainer:\n  max_epochs: 3\n---\n", {}, {"{bad}:", "a second YAML document"}},
        // Before: `internal error: stoul`.
        ErrorCase{"ListIndexOfTwentyDigits", "", {"--model.model.init_args.tasks.init_args.modules.99999999999999999999.init_args.weight=1"},
                  {"'model.model.init_args.tasks.init_args.modules' is a list of", "'99999999999999999999' is not a valid index"}},
        ErrorCase{"PythonTag", "trainer:\n  max_epochs: !!python/int 3\n", {},
                  {"{bad}:2", "'trainer.max_epochs': YAML tag '!!python/int' is not supported"}},
        ErrorCase{"CustomTagOnAMapping", "trainer: !custom\n  max_epochs: 3\n", {},
                  {"{bad}:", "'trainer': YAML tag '!custom' is not supported"}},
        ErrorCase{"RecursiveAlias", "x: &a\n  - *a\n", {}, {"{bad}:", "nested too deeply", "alias"}},
        ErrorCase{"AliasBomb",
                  "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                  "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                  "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                  "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
                  {}, {"{bad}:", "too large", "alias"}},
        ErrorCase{"ConfigIsNotARegularFile", "", {"-c", "/dev/null"}, {"/dev/null: not a regular file"}},
        // Before: any bytes were taken. PyYAML (salt's reader, on a UTF-8 text file)
        // refuses both; a BOM and other UTF-8 text are fine (BomAndUtf8TextAreRead).
        ErrorCase{"NotUtf8", "trainer:\n  max_epochs: 3\n  default_root_dir: logs\xff\xfe\n", {},
                  {"{bad}:3:25: not UTF-8 (byte 0xff): salt reads config files as UTF-8"}},
        ErrorCase{"OverlongUtf8", "trainer:\n  default_root_dir: \xc0\xaf" "etc\n", {}, {"{bad}:2:21: not UTF-8 (byte 0xc0)"}},
        ErrorCase{"ControlCharacter", "trainer:\n  default_root_dir: \"a\x07" "b\"\n", {},
                  {"{bad}:2:23: the control character U+0007, which YAML (and salt's reader) does not allow"}},
        // Sizes no config comes near, refused before their cost grows (300,000 keys took
        // minutes): the largest of salt's and the zoo's configs has 23 keys in a mapping.
        ErrorCase{"MappingWithTooManyKeys", many_keys(1001), {},
                  {"{bad}:3: a mapping of 1001 keys ('data.labels'); salt-cpp reads at most 1000 keys"}},
        ErrorCase{"ConfigFileOverOneMiB", "# " + std::string(1 << 20, 'x') + "\n", {},
                  {"{bad}: a config file of 1048579 bytes; salt-cpp reads at most 1 MiB"}},
        ErrorCase{"TooManyArguments", "", std::vector<std::string>(2001, "--trainer.max_epochs=2"),
                  {"the command line has 200", "arguments; salt-cpp takes at most 2000"}}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(Validation, BomAndUtf8TextAreRead) {
  TempDir dir;
  write_file(dir / "utf8.yaml", "\xef\xbb\xbftrainer:\n  default_root_dir: caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80\n");
  const auto r = resolve_args(gn2_with({"-c", (dir / "utf8.yaml").string()}));
  const auto dir_read = r.config["trainer"]["default_root_dir"].as<std::string>();  // made absolute
  const std::string text = "/caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80";
  ASSERT_GE(dir_read.size(), text.size());
  EXPECT_EQ(dir_read.substr(dir_read.size() - text.size()), text);
}

TEST(Validation, MissingRequiredKeyNamesIt) {
  TempDir dir;
  write_file(dir / "base.yaml", "data: {train_file: a.h5, val_file: b.h5, norm_dict: n.yaml, num_workers: 0}\n");
  auto message = error_of({"-c", repo_config("dips.yaml")}, (dir / "base.yaml").string());
  EXPECT_NE(message.find("missing required key 'batch_size'"), std::string::npos) << message;
}

TEST(Validation, IgnoredComponentsAndKeysWarnOnce) {
  TempDir dir;
  write_file(dir / "salt_base.yaml",
             "trainer:\n  logger:\n    class_path: lightning.pytorch.loggers.comet.CometLogger\n"
             "    init_args: { project: salt }\n");
  auto r = resolve_args({"-c", repo_config("GN2.yaml"), "-c", (dir / "salt_base.yaml").string(), "--compile"});
  ASSERT_EQ(r.warnings.size(), 2u);
  auto has = [&](const std::string& text) {
    for (const auto& w : r.warnings)
      if (w.find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("salt_base.yaml:2: lightning.pytorch.loggers.CometLogger cannot be reached from salt-cpp; "
                  "TensorBoard event files are written to <run>/tensorboard instead"));
  EXPECT_TRUE(has("command line '--compile': 'compile' has no effect: LibTorch C++ has no torch.compile"));
  EXPECT_TRUE(resolve_args(kGN2).warnings.empty());
}

// Fine-tuning (salt-cpp's own key): a checkpoint path alone or the mapping, paths
// made absolute, each pattern a regular expression; config.yaml leaves it out.
TEST(Validation, InitFromTakesAPathOrItsMappingAndRefusesABadPattern) {
  const auto read = [](const std::vector<std::string>& extra) {
    return config::read_run_config(resolve_args(gn2_with(extra)).config).init_from;
  };
  EXPECT_FALSE(read({}).has_value());
  const auto cwd = std::filesystem::current_path();
  const auto scalar = read({"--init_from", "runs/a.ckpt"});
  ASSERT_TRUE(scalar.has_value());
  EXPECT_EQ(scalar->ckpt_path, (cwd / "runs/a.ckpt").string());
  EXPECT_TRUE(scalar->include.empty() && scalar->exclude.empty() && scalar->freeze.empty());
  const auto mapping = read({"--init_from.ckpt_path", "a.ckpt", "--init_from.freeze", "[encoder, '^model\\.init_nets']",
                             "--init_from.exclude", "[tasks]"});
  ASSERT_TRUE(mapping.has_value());
  EXPECT_EQ(mapping->ckpt_path, (cwd / "a.ckpt").string());
  EXPECT_EQ(mapping->freeze, (std::vector<std::string>{"encoder", "^model\\.init_nets"}));
  EXPECT_EQ(mapping->exclude, std::vector<std::string>{"tasks"});
  EXPECT_TRUE(mapping->include.empty());

  try {
    read({"--init_from.ckpt_path", "a.ckpt", "--init_from.freeze", "[ok, 'encoder(']"});
    ADD_FAILURE() << "a bad pattern was read";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'init_from.freeze.1': 'encoder(' is not a regular expression"),
              std::string::npos) << e.what();
  }
  EXPECT_NE(error_of(gn2_with({"--init_from.freeze", "[encoder]"})).find("missing required key 'ckpt_path'"),
            std::string::npos) << error_of(gn2_with({"--init_from.freeze", "[encoder]"}));
  EXPECT_NE(error_of(gn2_with({"--init_from.ckpt_path", "a.ckpt", "--init_from.frezee", "[x]"})).find("did you mean"),
            std::string::npos);
}

}  // namespace
}  // namespace salt::testing
