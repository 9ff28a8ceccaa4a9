// The `salt` binary as a user runs it: help, version, --print_config, and one-line
// errors with exit code 2 and no stack trace.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

#include "config/schema.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

std::string cfg(const std::string& name) { return (source_dir() / "configs" / name).string(); }

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(Cli, VersionReportsTorchCudaAndBlas) {
  auto r = run_salt({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("salt-cpp "), std::string::npos);
  EXPECT_NE(r.out.find("LibTorch: "), std::string::npos);
  EXPECT_NE(r.out.find("CUDA: "), std::string::npos);
  EXPECT_NE(r.out.find("BLAS: "), std::string::npos);
  EXPECT_NE(r.out.find("commit: "), std::string::npos);
}

// Which collective backends the binary has: Gloo is missing from a build against a
// LibTorch without Gloo's headers (pip's), which gpu_check.sh's preflight shows.
TEST(Cli, VersionNamesTheDataParallelBackends) {
  auto r = run_salt({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("\ndata parallel: gloo"), std::string::npos) << r.out;  // Debian's LibTorch has its headers
}

TEST(Cli, FitHelpListsEveryKeyWithItsDefault) {
  auto r = run_salt({"fit", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Walk the schema: every leaf key of every section and of every component.
  std::function<void(const config::Type&, const std::string&)> check = [&](const config::Type& type,
                                                                            const std::string& prefix) {
    for (const auto& f : type.fields) {
      auto key = prefix.empty() ? f.name : prefix + "." + f.name;
      if (f.type->kind == config::Type::Kind::kStruct) {
        check(*f.type, key);
        continue;
      }
      std::string expected_default = "required";
      const auto& v = f.default_value;
      if (!f.required() && v.IsScalar() && v.Scalar().find_first_of(".eE") != std::string::npos &&
          v.Scalar().find_first_not_of("0123456789.eE+-") == std::string::npos) {
        // A float: the shortest text that reads back as it (0.05, not 0.050000000000000003).
        const double x = std::stod(v.Scalar());
        const auto shown = fmt::format("{}", x);
        EXPECT_EQ(std::stod(shown), x) << key;
        expected_default = "default: " + shown;
      } else if (!f.required()) {
        YAML::Emitter e;
        e.SetNullFormat(YAML::LowerNull);
        e << YAML::Flow << v;
        expected_default = std::string("default: ") + e.c_str();
      }
      auto line = "--" + key + " " + f.type->describe() + "  (" + expected_default + ")";
      EXPECT_NE(r.out.find(line), std::string::npos) << "help lacks: " << line;
    }
  };
  for (const auto& f : config::root_type()->fields)
    if (f.type->kind == config::Type::Kind::kStruct) check(*f.type, f.name);
  for (const auto& spec : config::components().all()) {
    EXPECT_NE(r.out.find("\n" + spec.class_path + "  [" + spec.category + "]"), std::string::npos) << spec.class_path;
    if (spec.init_args->kind == config::Type::Kind::kStruct) check(*spec.init_args, "init_args");
  }
  for (const auto* flag : {"-c, --config FILE", "--print_config", "-n, --name NAME", "-f, --force", "-t, --tag",
                           "--compile", "-oc, --overwrite_config", "-ls, --log_suffix SUFFIX", "--ckpt_path FILE",
                           "--seed_everything INT|true"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
}

TEST(Cli, PrintConfigIsValidYamlThatReadsBack) {
  TempDir dir;
  auto r = run_salt({"fit", "-c", cfg("GN2.yaml"), "--trainer.max_epochs", "3", "--print_config"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto printed = YAML::Load(r.out);
  EXPECT_EQ(printed["trainer"]["max_epochs"].as<int>(), 3);
  EXPECT_EQ(printed["name"].as<std::string>(), "GN2");
  write_file(dir / "config.yaml", r.out);
  auto again = run_salt({"fit", "-c", (dir / "config.yaml").string(), "--print_config"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, r.out);
}

TEST(Cli, TestAndValidateComposeTheSameWay) {
  for (const auto* command : {"test", "validate"}) {
    auto r = run_salt({command, "-c", cfg("dips.yaml"), "--print_config"});
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_NE(r.out.find("name: dips"), std::string::npos);
  }
}

TEST(Cli, ConfigErrorIsOneLineWithExitCode2) {
  TempDir dir;
  write_file(dir / "typo.yaml", "trainer:\n  max_epoch: 3\n");
  auto r = run_salt({"fit", "-c", cfg("GN2.yaml"), "-c", (dir / "typo.yaml").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("salt: error: " + (dir / "typo.yaml").string() + ":2: 'trainer.max_epoch': unknown key; "
                       "did you mean 'max_epochs'?"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(Cli, UserInputQuotedInAnErrorStaysOnOneLine) {
  // A value with a newline (and a binary file as a config) must not split the error.
  auto r = run_salt({"fit", "-c", cfg("GN2.yaml"), "--data.batch_size=1\n2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("1\\n2"), std::string::npos) << r.err;
  auto binary = run_salt({"fit", "-c", salt::testing::salt_binary()});
  EXPECT_EQ(binary.exit_code, 2) << binary.err;
  EXPECT_EQ(count_lines(binary.err), 1) << binary.err;
}

TEST(Cli, BadFlagsAreUsageErrors) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"fit", "--configg", "x"},
                                                                {"fit", "stray"},
                                                                {"frobnicate"},
                                                                {"fit", "-c", "/no/such.yaml"}}) {
    auto r = run_salt(args);
    EXPECT_EQ(r.exit_code, 2) << args[1];
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("salt: error: ", 0), 0u) << r.err;
  }
}

TEST(Cli, WarningsForAcceptedButUnusedKeys) {
  auto r = run_salt({"fit", "-c", cfg("GN2.yaml"), "--compile", "--print_config"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("warning: command line '--compile': 'compile' has no effect"), std::string::npos) << r.err;
}

TEST(Cli, BaseConfigCanBeOverridden) {
  TempDir dir;
  write_file(dir / "base.yaml",
             "data: {batch_size: 77}\nmodel: {lrs_config: {initial: 1e-3, max: 1e-2, end: 1e-3, pct_start: 0.1}}\n");
  auto r = run_salt({"fit", "-c", cfg("GN2.yaml"), "--data.train_file=t.h5", "--data.val_file=v.h5",
                     "--data.norm_dict=n.yaml", "--print_config"},
                    {}, {"SALT_BASE_CONFIG=" + (dir / "base.yaml").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(YAML::Load(r.out)["data"]["batch_size"].as<int>(), 4000);  // GN2 wins over base
  auto r2 = run_salt({"fit", "-c", cfg("dips.yaml"), "--data.train_file=t.h5", "--data.val_file=v.h5",
                      "--data.norm_dict=n.yaml", "--data.num_workers=0", "--print_config"},
                     {}, {"SALT_BASE_CONFIG=" + (dir / "base.yaml").string()});
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_EQ(YAML::Load(r2.out)["data"]["batch_size"].as<int>(), 77);
}

}  // namespace
}  // namespace salt::testing

namespace salt::testing {
namespace {

TEST(Cli, ConfigReferenceDocIsUpToDate) {
  auto help = run_salt({"fit", "--help"});
  ASSERT_EQ(help.exit_code, 0);
  auto doc = read_file(source_dir() / "docs" / "config-reference.md");
  EXPECT_NE(doc.find("```text\n" + help.out + "```"), std::string::npos)
      << "docs/config-reference.md is out of date: run scripts/update_docs.sh";
}

// docs/environment.md is `salt --help-env --markdown`; --help-env shows each
// variable's value now.
TEST(Cli, EnvironmentDocIsUpToDateAndHelpEnvShowsValuesNow) {
  auto markdown = run_salt({"--help-env", "--markdown"});
  ASSERT_EQ(markdown.exit_code, 0) << markdown.err;
  EXPECT_EQ(read_file(source_dir() / "docs" / "environment.md"), markdown.out)
      << "docs/environment.md is out of date: run scripts/update_docs.sh";
  EXPECT_NE(markdown.out.find("| `SALT_DIST_TIMEOUT` | seconds, 0.001 to 10000000 | 60 |"), std::string::npos);
  auto now = run_process({"env", "-u", "SALT_HOST_TWINS", "SALT_CUDA_GRAPHS=0", salt_binary(), "--help-env"});
  ASSERT_EQ(now.exit_code, 0) << now.err;
  EXPECT_NE(now.out.find("SALT_CUDA_GRAPHS=0 "), std::string::npos) << now.out;
  EXPECT_NE(now.out.find("SALT_HOST_TWINS unset (1) "), std::string::npos) << now.out;
  for (const char* name : {"SALT_COPY_STREAM", "SALT_CPU_BF16", "SALT_DIST_BUCKET_MB", "SALT_SHARE_DIR", "OMP_NUM_THREADS"})
    EXPECT_NE(now.out.find(name), std::string::npos) << name;
}

// docs/training.md lists every option --help marks [no effect] / [not supported],
// with its reason (issue: what salt's docs name but salt-cpp does not honour).
TEST(Cli, UnhonouredOptionsTableIsUpToDate) {
  const auto build_dir = std::filesystem::path(salt::testing::salt_binary()).parent_path().parent_path();
  auto table = run_process({"bash", (source_dir() / "scripts" / "update_docs.sh").string(), "--unhonoured"}, {},
                           {"SALT_BUILD_DIR=" + build_dir.string()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("| `trainer.strategy` | no effect: "), std::string::npos) << table.out;
  auto doc = read_file(source_dir() / "docs" / "training.md");
  EXPECT_NE(doc.find("<!-- unhonoured: generated by scripts/update_docs.sh -->\n" + table.out + "<!-- unhonoured: end -->"),
            std::string::npos)
      << "docs/training.md's table of unhonoured options is out of date: run scripts/update_docs.sh";
}

// The config.yaml salt itself writes into a run directory carries every
// Lightning trainer argument (suggest_integrations too, with Lightning 2.6.2 and
// later), the logger and callbacks, links and what salt injects (init nets'
// variables, norm_config): salt-cpp reads it as it is.
TEST(Cli, ConfigWrittenBySaltIsAccepted) {
  TempDir dir;
  write_file(dir / "config.yaml", R"(# lightning.pytorch==2.4.0
seed_everything: 42
trainer:
  accelerator: gpu
  strategy: auto
  devices: 1
  num_nodes: 1
  precision: 16-mixed
  logger:
    class_path: lightning.pytorch.loggers.CometLogger
    init_args:
      api_key: null
      save_dir: null
      project_name: salt
      experiment_name: GN2
  callbacks:
  - class_path: salt.callbacks.Checkpoint
    init_args:
      monitor_loss: val/jets_classification_loss
  - class_path: salt.callbacks.PredictionWriter
    init_args:
      write_tracks: false
      write_objects: false
      half_precision: false
      object_classes: null
      extra_vars: null
  - class_path: lightning.pytorch.callbacks.LearningRateMonitor
    init_args:
      logging_interval: null
      log_momentum: false
      log_weight_decay: false
  fast_dev_run: false
  max_epochs: 40
  min_epochs: null
  max_steps: -1
  min_steps: null
  max_time: null
  limit_train_batches: null
  limit_val_batches: null
  limit_test_batches: null
  limit_predict_batches: null
  overfit_batches: 0.0
  val_check_interval: null
  check_val_every_n_epoch: 1
  num_sanity_val_steps: null
  log_every_n_steps: 50
  enable_checkpointing: null
  enable_progress_bar: null
  enable_model_summary: null
  accumulate_grad_batches: 1
  gradient_clip_val: null
  gradient_clip_algorithm: null
  deterministic: null
  benchmark: null
  inference_mode: true
  use_distributed_sampler: true
  suggest_integrations: true
  profiler: null
  detect_anomaly: false
  barebones: false
  plugins: null
  sync_batchnorm: false
  reload_dataloaders_every_n_epochs: 0
  default_root_dir: logs/GN2_20240101-T120000
model:
  model:
    class_path: salt.models.SaltModel
    init_args:
      init_nets:
      - input_name: tracks
        dense_config:
          output_size: 256
          hidden_layers: [256]
          activation: ReLU
        variables:
          jets: [pt_btagJes, eta_btagJes]
          tracks: [d0, z0SinTheta]
        global_object: jets
      tasks:
        class_path: torch.nn.ModuleList
        init_args:
          modules:
          - class_path: salt.models.ClassificationTask
            init_args:
              name: jets_classification
              input_name: jets
              dense_config: {input_size: 256, output_size: 4, hidden_layers: [128]}
              loss:
                class_path: torch.nn.CrossEntropyLoss
                init_args:
                  weight: [1.0, 2.0, 1.5, 9.0]
              label: flavour_label
              use_class_dict: true
      pool_net:
        class_path: salt.models.GlobalAttentionPooling
        init_args:
          input_size: 256
  lrs_config:
    initial: 1.0e-07
    max: 0.0005
    end: 1.0e-05
    pct_start: 0.01
    weight_decay: 1.0e-05
  global_object: jets
  norm_config:
    norm_dict: logs/GN2_20240101-T120000/norm_dict.yaml
    variables:
      jets: [pt_btagJes, eta_btagJes]
      tracks: [d0, z0SinTheta]
    global_object: jets
  name: GN2
  mup_config: null
  loss_mode: wsum
  optimizer: AdamW
data:
  train_file: /data/pp_output_train.h5
  val_file: /data/pp_output_val.h5
  batch_size: 4000
  num_workers: 40
  num_train: -1
  num_val: -1
  num_test: -1
  move_files_temp: null
  class_dict: logs/GN2_20240101-T120000/class_dict.yaml
  test_file: null
  test_suff: null
  pin_memory: true
  persistent_workers: true
  prefetch_factor: 2
  multiprocessing_context: null
  norm_dict: logs/GN2_20240101-T120000/norm_dict.yaml
  variables:
    jets: [pt_btagJes, eta_btagJes]
    tracks: [d0, z0SinTheta]
  global_object: jets
  input_map: null
  num_inputs: null
  non_finite_to_num: false
  labels: null
name: GN2
ckpt_path: null
force: false
tag: false
compile: false
overwrite_config: false
log_suffix: null
)");
  auto r = run_salt({"fit", "-c", (dir / "config.yaml").string(), "--print_config"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto printed = YAML::Load(r.out);
  EXPECT_EQ(printed["trainer"]["max_epochs"].as<int>(), 40);
  EXPECT_EQ(printed["model"]["model"]["init_args"]["init_nets"][0]["global_object"].as<std::string>(), "jets");
  // The Comet logger is accepted with a warning saying what happens instead.
  EXPECT_NE(r.err.find("CometLogger cannot be reached from salt-cpp; TensorBoard event files are written to "
                       "<run>/tensorboard instead"),
            std::string::npos)
      << r.err;
}

// salt's clean_logs utility, same flags and stdout lines.
TEST(Cli, CleanLogsDeletesRunsWithoutCheckpoints) {
  TempDir dir;
  std::filesystem::create_directories(dir / "logs" / "trained" / "ckpts");
  std::filesystem::create_directories(dir / "logs" / "crashed");
  auto r = run_salt({"clean_logs", "--folder_path", (dir / "logs").string(), "--subdirectory", "ckpts"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Deleting directory: " + (dir / "logs" / "crashed").string() + "\nDeleted 1 directories\n");
  EXPECT_TRUE(std::filesystem::exists(dir / "logs" / "trained"));
  auto bad = run_salt({"clean_logs", "--folder_path", (dir / "nothing").string(), "--subdirectory", "ckpts"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_EQ(error_lines(bad.err), 1) << bad.err;
  EXPECT_NE(bad.err.find("nothing is not a directory"), std::string::npos) << bad.err;
}

// argparse takes salt's `-mf X` and `-mf=X` alike: both reach the export (which
// then stops at the missing checkpoint), neither is an unknown flag.
TEST(Cli, ToOnnxTakesBothSpellingsOfMf) {
  TempDir dir;
  const auto ckpt = (dir / "missing.ckpt").string();
  std::vector<std::string> errors;
  for (const std::vector<std::string>& mf : {std::vector<std::string>{"-mf", "hadron"}, {"-mf=hadron"}}) {
    std::vector<std::string> args{"to_onnx", "--ckpt_path", ckpt, "--force"};
    args.insert(args.end(), mf.begin(), mf.end());
    auto r = run_salt(args, dir.path());
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(r.err.find("not expected"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("missing.ckpt"), std::string::npos) << r.err;
    errors.push_back(r.err);
  }
  EXPECT_EQ(errors[0], errors[1]);
}

}  // namespace
}  // namespace salt::testing
