// The `salt` binary as a user runs it: help, version, --print_config, and one-line
// errors with exit code 2 and no stack trace.
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
      if (!f.required()) {
        YAML::Emitter e;
        e.SetNullFormat(YAML::LowerNull);
        e << YAML::Flow << f.default_value;
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
