// The switches that change how a step is computed (training/step/step_options.h): one
// parser, the core/env_switch.h rule for each, defaults and sources as recorded,
// and the real `salt fit`'s metadata.yaml listing them.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "core/cpu_budget.h"
#include "core/omp_spin.h"
#include "core/errors.h"
#include "models/kernels/cpu_bf16.h"
#include "training/fit_support.h"
#include "training/step/step_options.h"
#include "models/kernels/norm_cast.h"

namespace salt::training {
namespace {

// An environment holding just `vars`.
EnvLookup environment(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::string refusal(const std::map<std::string, std::string>& vars) {
  try {
    parse_step_options(environment(vars), 2, false);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(StepOptions, UnsetOrEmptyGivesEachDefault) {
  for (const std::string empty : {"unset", ""}) {
    std::map<std::string, std::string> vars;
    if (empty.empty())
      for (const char* name : {"SALT_HOST_TWINS", "SALT_COPY_STREAM", "SALT_CUDA_GRAPHS", "SALT_SHORT_ATTENTION",
                               "SALT_SEGMENT_SUM_KERNEL", "SALT_NORM_CAST_KERNEL", "SALT_CPU_BF16", "SALT_CPU_BF16_STATIC_ROWS",
                               "SALT_MAX_STEPS_AHEAD", "OMP_NUM_THREADS"})
        vars[name] = "";
    for (bool cpu_emulates : {false, true}) {
      const auto o = parse_step_options(environment(vars), 2, cpu_emulates);
      EXPECT_TRUE(o.host_twins.value);
      EXPECT_TRUE(o.copy_stream.value);
      EXPECT_TRUE(o.cuda_graphs.value);
      EXPECT_TRUE(o.short_attention.value);
      EXPECT_FALSE(o.segment_sum_kernel.value);
      EXPECT_FALSE(o.norm_cast_kernel.value);
      EXPECT_EQ(o.cpu_bf16.value, cpu_emulates ? CpuBf16Mode::kEmulated : CpuBf16Mode::kNative);
      EXPECT_EQ(o.cpu_bf16_static_rows.value, !cpu_emulates);  // where bf16 products run in oneDNN
      EXPECT_EQ(o.steps_ahead.value, 0);
      EXPECT_EQ(o.threads.value, 0);
      for (auto source : {o.host_twins.source, o.copy_stream.source, o.cuda_graphs.source, o.short_attention.source,
                          o.segment_sum_kernel.source, o.norm_cast_kernel.source, o.cpu_bf16.source, o.cpu_bf16_static_rows.source,
                          o.steps_ahead.source, o.threads.source})
        EXPECT_EQ(source, OptionSource::kDefault) << empty;
    }
  }
}

TEST(StepOptions, EachSwitchComesFromTheEnvironment) {
  const auto o = parse_step_options(environment({{"SALT_HOST_TWINS", "0"},
                                                 {"SALT_COPY_STREAM", "0"},
                                                 {"SALT_CUDA_GRAPHS", "0"},
                                                 {"SALT_SHORT_ATTENTION", "0"},
                                                 {"SALT_SEGMENT_SUM_KERNEL", "1"},
                                                 {"SALT_NORM_CAST_KERNEL", "1"},
                                                 {"SALT_CPU_BF16", "native"},
                                                 {"SALT_CPU_BF16_STATIC_ROWS", "0"},
                                                 {"SALT_MAX_STEPS_AHEAD", "3"},
                                                 {"OMP_NUM_THREADS", "8"}}),
                                    2, true);
  EXPECT_FALSE(o.host_twins.value);
  EXPECT_FALSE(o.copy_stream.value);
  EXPECT_FALSE(o.cuda_graphs.value);
  EXPECT_FALSE(o.short_attention.value);
  EXPECT_TRUE(o.segment_sum_kernel.value);
  EXPECT_TRUE(o.norm_cast_kernel.value);
  EXPECT_EQ(o.cpu_bf16.value, CpuBf16Mode::kNative);  // the variable over the CPU
  EXPECT_FALSE(o.cpu_bf16_static_rows.value);          // the variable over cpu_bf16's default
  EXPECT_EQ(o.steps_ahead.value, 3);
  EXPECT_EQ(o.threads.value, 8);
  for (auto source : {o.host_twins.source, o.copy_stream.source, o.cuda_graphs.source, o.short_attention.source,
                      o.segment_sum_kernel.source, o.norm_cast_kernel.source, o.cpu_bf16.source, o.cpu_bf16_static_rows.source,
                      o.steps_ahead.source, o.threads.source})
    EXPECT_EQ(source, OptionSource::kEnvironment);
}

// Every switch's mistyped value is one message naming the variable, the value and
// what it takes. Before, SALT_MAX_STEPS_AHEAD had its own parser and wording.
TEST(StepOptions, AMistypedValueOfEachSwitchNamesItAndWhatItTakes) {
  const std::map<std::string, std::string> expected = {
      {"SALT_HOST_TWINS", "expected 0 (the model reads the device) or 1 (the batch's host copies)"},
      {"SALT_COPY_STREAM", "expected 0 (the compute stream) or 1 (a copy stream)"},
      {"SALT_CUDA_GRAPHS", "expected 0 (eager steps) or 1 (CUDA graphs for the training steps)"},
      {"SALT_SHORT_ATTENTION", "expected 0 (flash attention) or 1 (salt-cpp's kernel for short jets)"},
      {"SALT_SEGMENT_SUM_KERNEL", "expected 0 (LibTorch's operators) or 1 (salt-cpp's kernel)"},
      {"SALT_NORM_CAST_KERNEL", "expected 0 (LibTorch's layer_norm and autocast's cast) or 1 (salt-cpp's kernel)"},
      {"SALT_CPU_BF16",
       "expected native (LibTorch's bf16 kernels) or emulated (bf16-rounded inputs multiplied in float32)"},
      {"SALT_CPU_BF16_STATIC_ROWS",
       "expected 0 (each batch's own row count) or 1 (rows padded to their bucket)"},
      {"SALT_MAX_STEPS_AHEAD", "expected a whole number from 0 to 1000"},
      {"OMP_NUM_THREADS",
       "expected a whole number from 1 to 8 (4 threads for each of the 2 cores this process may use)"},
  };
  for (const auto& [name, takes] : expected)
    EXPECT_EQ(refusal({{name, "yes"}}), name + "=yes: " + takes);
  for (const std::string depth : {"1001", "-1", "2.5"})
    EXPECT_EQ(refusal({{"SALT_MAX_STEPS_AHEAD", depth}}),
              "SALT_MAX_STEPS_AHEAD=" + depth + ": expected a whole number from 0 to 1000");
  EXPECT_EQ(refusal({{"SALT_CPU_BF16", "Native"}}).rfind("SALT_CPU_BF16=Native: expected native", 0), 0u);
}

TEST(StepOptions, MetadataListsEachSwitchWithItsValueAndSource) {
  const auto o = parse_step_options(environment({{"SALT_CUDA_GRAPHS", "0"}, {"SALT_MAX_STEPS_AHEAD", "2"}}), 2, true);
  const auto yaml = step_options_yaml(o);
  EXPECT_EQ(yaml.size(), 12u);
  EXPECT_EQ(yaml["openblas_thread_timeout"]["value"].as<std::string>(), "OpenBLAS's own (28)");
  EXPECT_EQ(yaml["gomp_spin"]["value"].as<std::string>(), "libgomp's own (300000)");
  EXPECT_FALSE(yaml["cuda_graphs"]["value"].as<bool>());
  EXPECT_EQ(yaml["cuda_graphs"]["source"].as<std::string>(), "environment");
  EXPECT_EQ(yaml["steps_ahead"]["value"].as<int>(), 2);
  EXPECT_EQ(yaml["cpu_bf16"]["value"].as<std::string>(), "emulated");
  EXPECT_EQ(yaml["cpu_bf16"]["source"].as<std::string>(), "default");
  EXPECT_FALSE(yaml["cpu_bf16_static_rows"]["value"].as<bool>());  // emulated: no oneDNN shapes to spare
  EXPECT_TRUE(yaml["host_twins"]["value"].as<bool>());
  EXPECT_EQ(yaml["host_twins"]["source"].as<std::string>(), "default");
  EXPECT_GE(yaml["threads"]["value"].as<int>(), 1);  // the count LibTorch computes with
}

// A card's graphs: decided before metadata.yaml is written (`used`, or `why` not),
// then corrected from what they did (record_graphs_count: used once a step replayed).
TEST(StepOptions, MetadataSaysWhetherTheGraphsRanAndWhyNot) {
  const auto o = parse_step_options(environment({}), 2, true);
  const auto refused = step_options_yaml(o, StepUse{true, false, "accumulate_grad_batches is 4"});
  EXPECT_FALSE(refused["cuda_graphs"]["used"].as<bool>());
  EXPECT_EQ(refused["cuda_graphs"]["why"].as<std::string>(), "accumulate_grad_batches is 4");
  EXPECT_TRUE(refused["host_twins"]["used"].as<bool>());  // on the card all the same

  auto graphed = step_options_yaml(o, StepUse{true, false, ""});
  EXPECT_TRUE(graphed["cuda_graphs"]["used"].as<bool>());
  EXPECT_FALSE(graphed["cuda_graphs"]["why"]);
  record_graphs_count(graphed, GraphsCount{0, 0, false});  // no step replayed yet (every bucket's warm-up)
  EXPECT_FALSE(graphed["cuda_graphs"]["used"].as<bool>());
  record_graphs_count(graphed, GraphsCount{3, 120, true});
  EXPECT_TRUE(graphed["cuda_graphs"]["used"].as<bool>());
  EXPECT_EQ(graphed["cuda_graphs"]["captured"].as<int>(), 3);
  EXPECT_EQ(graphed["cuda_graphs"]["replayed"].as<int>(), 120);
  EXPECT_TRUE(graphed["cuda_graphs"]["given_up"].as<bool>());
  EXPECT_EQ(graphed["cuda_graphs"]["source"].as<std::string>(), "default");  // the rest kept
}

// The norm-and-cast kernel writes bf16 or half rows: asked for on a card, it is
// used only under half-type autocast, and only in a build with salt-cpp's kernels.
TEST(StepOptions, TheNormCastKernelIsUsedOnlyUnderHalfAutocastOnACard) {
  const auto asked = parse_step_options(environment({{"SALT_NORM_CAST_KERNEL", "1"}}), 2, true);
  EXPECT_FALSE(step_options_yaml(asked, StepUse{true, false, "", false})["norm_cast_kernel"]["used"].as<bool>());
  EXPECT_FALSE(step_options_yaml(asked, StepUse{false, true, "", true})["norm_cast_kernel"]["used"].as<bool>());
  const auto half = step_options_yaml(asked, StepUse{true, false, "", true})["norm_cast_kernel"];
  EXPECT_EQ(half["used"].IsDefined(), !models::norm_cast_kernel_compiled()) << half;  // else each batch settles it
  EXPECT_EQ(half["source"].as<std::string>(), "environment");
  const auto unasked = parse_step_options(environment({}), 2, true);
  EXPECT_FALSE(step_options_yaml(unasked, StepUse{true, false, "", true})["norm_cast_kernel"]["used"].as<bool>());
  EXPECT_TRUE(forward_kernels(asked, false).norm_cast_kernel);
  EXPECT_FALSE(forward_kernels(unasked, false).norm_cast_kernel);
}

// Read once, in one place: no other file of lib names a switch's variable (a
// function static reading it at first use is how they hid before), but the table
// that declares every variable (core/env_switches.cpp).
TEST(StepOptions, OnlyStepOptionsReadsTheSwitches) {
  namespace fs = std::filesystem;
  std::vector<std::string> readers;
  for (const auto& entry : fs::recursive_directory_iterator(salt::testing::source_dir() / "lib")) {
    const auto ext = entry.path().extension();
    if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".cu")) continue;
    if (entry.path().filename() == "env_switches.cpp") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const char* name : {"SALT_HOST_TWINS", "SALT_COPY_STREAM", "SALT_CUDA_GRAPHS", "SALT_SHORT_ATTENTION",
                             "SALT_SEGMENT_SUM_KERNEL", "SALT_NORM_CAST_KERNEL", "SALT_CPU_BF16", "SALT_CPU_BF16_STATIC_ROWS",
                             "SALT_MAX_STEPS_AHEAD"})
      if (text.find('"' + std::string(name) + '"') != std::string::npos)
        readers.push_back(fs::relative(entry.path(), salt::testing::source_dir()).string() + ": " + name);
  }
  std::sort(readers.begin(), readers.end());
  EXPECT_EQ(readers.size(), 9u);
  for (const auto& r : readers) EXPECT_EQ(r.rfind("lib/training/step/step_options.cpp: ", 0), 0u) << r;
}

}  // namespace
}  // namespace salt::training

// The real `salt fit` on the CPU: metadata.yaml lists every switch with its value and
// where it came from. Before, none of them was recorded: two runs that differed only
// by a switch looked the same afterwards. Beside what was asked, `used` says what the
// steps did: bucketed rows were recorded as on where no step bucketed (a float32
// fit, or emulated bf16 kernels).

namespace salt::testing {

TEST_F(FitTest, MetadataRecordsEveryStepSwitchWithItsSource) {
  std::string err;  // the last fit's stderr
  auto fit = [&](const std::string& suffix, const std::vector<std::string>& set,
                 const std::vector<std::string>& more = {}) {
    std::vector<std::string> argv{"env"};
    for (const char* name : {"SALT_HOST_TWINS", "SALT_COPY_STREAM", "SALT_CUDA_GRAPHS", "SALT_SHORT_ATTENTION",
                             "SALT_SEGMENT_SUM_KERNEL", "SALT_NORM_CAST_KERNEL", "SALT_CPU_BF16", "SALT_CPU_BF16_STATIC_ROWS",
                             "SALT_MAX_STEPS_AHEAD", "OMP_NUM_THREADS", "GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT", salt::kShortSpinMarker})
      for (const char* a : {"-u", name}) argv.push_back(a);
    argv.insert(argv.end(), set.begin(), set.end());
    argv.push_back(salt_binary());
    argv.push_back("fit");
    for (const auto& a : small_gn2({"--trainer.max_epochs", "1", "--trainer.limit_train_batches", "2",
                                    "--trainer.limit_val_batches", "1", "-ls", suffix}))
      argv.push_back(a);
    argv.insert(argv.end(), more.begin(), more.end());
    const auto r = run_process(argv, dir.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    err = r.err;
    return YAML::LoadFile((dir / "logs" / ("GN2_cpu_" + suffix) / "metadata.yaml").string())["step_options"];
  };
  const auto defaults = fit("defaults", {});
  ASSERT_TRUE(defaults.IsMap()) << defaults;
  // CUDA graphs are on by default but no concern of a CPU run: not a word of them.
  EXPECT_EQ(err.find("CUDA graphs"), std::string::npos) << err;
  const std::vector<std::string> names = {"host_twins",  "copy_stream", "cuda_graphs", "short_attention",
                                          "segment_sum_kernel", "norm_cast_kernel", "cpu_bf16", "cpu_bf16_static_rows", "steps_ahead",
                                          "threads", "gomp_spin", "openblas_thread_timeout"};
  EXPECT_EQ(defaults.size(), names.size());
  for (const auto& name : names) {
    ASSERT_TRUE(defaults[name].IsMap()) << name;
    EXPECT_TRUE(defaults[name]["value"].IsScalar()) << name;
    EXPECT_EQ(defaults[name]["source"].as<std::string>(), "default") << name;
  }
  EXPECT_TRUE(defaults["host_twins"]["value"].as<bool>());
  EXPECT_TRUE(defaults["copy_stream"]["value"].as<bool>());
  EXPECT_TRUE(defaults["cuda_graphs"]["value"].as<bool>());
  EXPECT_TRUE(defaults["short_attention"]["value"].as<bool>());
  EXPECT_FALSE(defaults["segment_sum_kernel"]["value"].as<bool>());
  EXPECT_FALSE(defaults["norm_cast_kernel"]["value"].as<bool>());
  EXPECT_EQ(defaults["cpu_bf16_static_rows"]["value"].as<bool>(), !salt::models::cpu_bf16_emulated_by_default());
  EXPECT_EQ(defaults["steps_ahead"]["value"].as<int>(), 0);
  EXPECT_EQ(defaults["threads"]["value"].as<int>(), salt::choose_threads(salt::this_machine()).threads);
  // A float32 fit on the CPU: none of the card's switches, no CPU bf16 step, no bucket.
  for (const char* name : {"host_twins", "copy_stream", "cuda_graphs", "short_attention", "segment_sum_kernel",
                           "norm_cast_kernel", "cpu_bf16", "cpu_bf16_static_rows"})
    EXPECT_FALSE(defaults[name]["used"].as<bool>()) << name;
  EXPECT_EQ(defaults["cuda_graphs"]["why"].as<std::string>(), "the run is not on a card");
  EXPECT_FALSE(defaults["cuda_graphs"]["replayed"]);  // counts only where graphs were decided
  // Several cores beside OpenBLAS's own threads: the fit started again with a short
  // spin (core/omp_spin.h), before it printed anything (one start line, not two).
  const bool restarts = salt::affinity_cores() > 1 && salt::blas_runs_own_threads();
  EXPECT_EQ(defaults["gomp_spin"]["value"].as<std::string>(),
            restarts ? salt::kShortSpinCount : "libgomp's own (300000)");
  EXPECT_EQ(defaults["openblas_thread_timeout"]["value"].as<std::string>(),
            restarts ? salt::kShortBlasTimeout : "OpenBLAS's own (28)");
  size_t starts = 0;
  for (size_t at = err.find("computing with"); at != std::string::npos; at = err.find("computing with", at + 1))
    ++starts;
  EXPECT_EQ(starts, 1u) << err;

  const auto set = fit("set", {"SALT_CPU_BF16=emulated", "SALT_CPU_BF16_STATIC_ROWS=1", "SALT_MAX_STEPS_AHEAD=2",
                               "OMP_NUM_THREADS=1",
                               "SALT_CUDA_GRAPHS=1", "GOMP_SPINCOUNT=500"},
                       {"--trainer.precision", "bf16-mixed"});
  ASSERT_TRUE(set.IsMap()) << set;
  // Asked for by name, graphs that cannot run are a warning saying why.
  EXPECT_NE(err.find("warning: SALT_CUDA_GRAPHS=1 but the steps run eagerly: the run is not on a card"),
            std::string::npos)
      << err;
  EXPECT_EQ(set["cpu_bf16"]["value"].as<std::string>(), "emulated");
  EXPECT_EQ(set["steps_ahead"]["value"].as<int>(), 2);
  EXPECT_EQ(set["threads"]["value"].as<int>(), 1);
  EXPECT_EQ(set["gomp_spin"]["value"].as<std::string>(), "500");
  EXPECT_TRUE(set["cpu_bf16_static_rows"]["value"].as<bool>());
  // bf16 steps, but the emulated kernels never bucket their rows
  EXPECT_TRUE(set["cpu_bf16"]["used"].as<bool>());
  EXPECT_FALSE(set["cpu_bf16_static_rows"]["used"].as<bool>());
  for (const char* name : {"cpu_bf16", "cpu_bf16_static_rows", "steps_ahead", "threads", "cuda_graphs", "gomp_spin"})
    EXPECT_EQ(set[name]["source"].as<std::string>(), "environment") << name;
  EXPECT_EQ(set["host_twins"]["source"].as<std::string>(), "default");
  EXPECT_FALSE(set["cuda_graphs"]["used"].as<bool>());
  EXPECT_EQ(set["cuda_graphs"]["why"].as<std::string>(), "the run is not on a card");
  // metadata.yaml's `environment`: every variable of `salt --help-env` that was set.
  const auto environment = YAML::LoadFile((dir / "logs" / "GN2_cpu_set" / "metadata.yaml").string())["environment"];
  ASSERT_TRUE(environment.IsMap()) << environment;
  EXPECT_EQ(environment["SALT_CPU_BF16"].as<std::string>(), "emulated");
  EXPECT_EQ(environment["SALT_MAX_STEPS_AHEAD"].as<std::string>(), "2");
  EXPECT_EQ(environment["OMP_NUM_THREADS"].as<std::string>(), "1");
  EXPECT_FALSE(environment["SALT_HOST_TWINS"]);  // unset
  EXPECT_FALSE(environment["GOMP_SPINCOUNT"]);   // libgomp's, recorded in step_options
}

}  // namespace salt::testing
