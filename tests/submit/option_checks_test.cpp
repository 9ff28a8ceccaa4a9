// The helpers' option values are checked before anything is composed or written:
// no control characters (a newline would add lines to the job files), and the
// memory, time and signal formats that sbatch and condor_submit accept. Every
// rejection is one UsageError line naming the option as the command spells it.
#include <algorithm>

#include "core/errors.h"
#include "submit/option_checks.h"
#include "submit/submit_htcondor.h"
#include "submit/submit_slurm.h"
#include "submit/sweep.h"
#include "submit_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

using Args = std::vector<std::string>;

Args with_config(const Args& extra) {
  Args args{"-c", "x.yaml"};  // parsing does not open it
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The UsageError's message, or "<accepted>".
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "<accepted>";
}

std::string slurm_error(const Args& extra) {
  return error_of([&] { submit::parse_slurm_options(with_config(extra)); });
}
std::string condor_error(const Args& extra) {
  return error_of([&] { submit::parse_condor_options(with_config(extra)); });
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The message names the option, says what is wrong, and is one line.
void expect_rejected(const std::string& error, const std::string& part) {
  EXPECT_TRUE(has(error, part)) << "expected '" << part << "' in: " << error;
  EXPECT_EQ(error.find_first_of("\n\r"), std::string::npos) << error;
}

constexpr const char* kOneLine = " must be a single line without control characters";

TEST(SubmitOptionChecks, ControlCharactersInSlurmOptionValuesAreRefused) {
  const std::vector<std::pair<Args, std::string>> table{
      {{"-p", "gpu\n#SBATCH --foo\ntouch /tmp/pwned"}, "-p/--partition"},
      {{"--partition=gpu\ntouch /tmp/pwned"}, "-p/--partition"},
      {{"-cn", "a100\rx"}, "--constraint"},
      {{"-a", "atlas\n"}, "-a/--account"},
      {{"-q", std::string("hi\0gh", 5)}, "-q/--qos"},
      {{"-t", "x\ny"}, "-t/--tag"},
      {{"-gt", "v100\tx"}, "--gpu_type"},
      {{"-m", "100G\n"}, "-m/--memory"},
      {{"-ti", "10\n"}, "--time"},
      {{"-s", "SIGUSR1@90\n"}, "-s/--signal"},
      {{"-sls", "a\x1b[2Jb"}, "--salt_log_suffix"},
      {{"--sweep", "s\n.yaml"}, "--sweep"},
      {{"-c", "y\n.yaml"}, "-c/--config"},
      {{"--image", "/i\n.sif"}, "--image"},
      {{"-b", "/data\n"}, "-b/--bind"},
      {{"--conda_env", "salt\x7f"}, "--conda_env"},
      {{"--conda_activate", "a\nb"}, "--conda_activate"},
      {{"--salt_binary", "/bin/salt\n"}, "--salt_binary"},
      {{"--slurm.mail-user=me\n#SBATCH --x"}, "--slurm.mail-user"},
      {{"--slurm.mail\nuser=me"}, "--slurm.KEY"},
      {{"--config.trainer.max_epochs=3\nx"}, "--config.trainer.max_epochs"},
      {{"--config.trainer\n.max_epochs=3"}, "--config.KEY"},
  };
  for (const auto& [args, option] : table) expect_rejected(slurm_error(args), option + kOneLine);
}

TEST(SubmitOptionChecks, ControlCharactersInCondorOptionValuesAreRefused) {
  const std::vector<std::pair<Args, std::string>> table{
      {{"--requirements", "x\nqueue 100\nExecutable = /bin/sh"}, "--requirements"},
      {{"--jobflavour", "tomorrow\n"}, "--jobflavour"},
      {{"--project", "p\rq"}, "--project"},
      {{"--memory", "80 GB\n"}, "--memory"},
      {{"-t", "a\nb"}, "-t/--tag"},
      {{"--condor.getenv=True\nqueue 100"}, "--condor.getenv"},
      {{"--condor.a\nb=1"}, "--condor.KEY"},
      {{"--config.data.batch_size=5\n"}, "--config.data.batch_size"},
  };
  for (const auto& [args, option] : table) expect_rejected(condor_error(args), option + kOneLine);
  // A parse error quoting a bad token stays one line too.
  expect_rejected(condor_error({"--nope\nqueue"}), "--nope\\nqueue");
}

TEST(SubmitOptionChecks, SingleLineValuesAreKept) {
  auto o = submit::parse_slurm_options(with_config({"-p", "gpu,debug", "-a", "my account", "--slurm.mail-user=me@x"}));
  EXPECT_EQ(o.partition, "gpu,debug");
  EXPECT_EQ(o.account, "my account");
  auto c = submit::parse_condor_options(with_config({"--requirements", "(OpSysAndVer =?= \"AlmaLinux9\")"}));
  EXPECT_EQ(c.requirements, "(OpSysAndVer =?= \"AlmaLinux9\")");
}

TEST(SubmitOptionChecks, SlurmMemory) {
  for (const auto* ok : {"100G", "1", "4096", "16g", "2T", "512M", "500K", "none"})
    EXPECT_EQ(slurm_error({"-m", ok}), "<accepted>") << ok;
  for (const auto* bad : {"foo", "0", "0G", "-1", "10GB", "1.5G", "G", "", " 10G", "10 G", "100X"})
    expect_rejected(slurm_error({"-m", bad}),
                    std::string("-m/--memory '") + bad + "': expected a positive integer with an optional K, M, G or T "
                                                         "suffix, e.g. 100G");
}

TEST(SubmitOptionChecks, SlurmTime) {
  for (const auto* ok : {"60", "0", "30:00", "24:00:00", "1-12", "2-00:00", "1-00:00:00", "UNLIMITED", "infinite"})
    EXPECT_EQ(slurm_error({"-ti", ok}), "<accepted>") << ok;
  for (const auto* bad : {"abc", "1:2:3:4", "1-", "-1", "1-2-3", "24h", "1.5", ":30", "1-:00", " 60", "1-2:3:4:5"})
    expect_rejected(slurm_error({"--time", bad}),
                    std::string("-ti/--time '") + bad + "': expected minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or "
                                                        "D-HH:MM:SS, e.g. 24:00:00");
}

TEST(SubmitOptionChecks, CondorMemory) {
  for (const auto* ok : {"80000", "80 GB", "80GB", "80gb", "512 MB", "2G", "1 TB", "1024k", "1KB", "40 Gb"})
    EXPECT_EQ(condor_error({"--memory", ok}), "<accepted>") << ok;
  for (const auto* bad : {"abc", "0", "0 GB", "-1", "80  GB", "80 GiB", "1.5GB", "GB", "80 XB", "", "80 GB; x"})
    expect_rejected(condor_error({"--memory", bad}),
                    std::string("--memory '") + bad + "': expected a positive number of MiB, or with a unit KB, MB, "
                                                      "GB or TB, e.g. 80000 or '80 GB'");
}

TEST(SubmitOptionChecks, SignalsAreOnesBashCanTrap) {
  const std::vector<std::tuple<std::string, std::string, int>> ok{
      {"SIGUSR1@90", "USR1", 90}, {"USR1@90", "USR1", 90},     {"B:USR2@30", "USR2", 30}, {"sigterm@60", "TERM", 60},
      {"INT@1", "INT", 1},        {"HUP@65535", "HUP", 65535}, {"10@90", "10", 90},       {"SIGXCPU@5", "XCPU", 5},
      {"SIGALRM@20", "ALRM", 20}, {"b:sigusr1@90", "USR1", 90}};
  for (const auto& [text, name, seconds] : ok) {
    auto sig = submit::parse_signal(text);
    EXPECT_EQ(sig.name, name) << text;
    EXPECT_EQ(sig.seconds, seconds) << text;
    // The script's `trap ... NAME` must be valid bash: the point of the check.
    auto r = run_process({"bash", "-c", "trap : " + sig.name});
    EXPECT_EQ(r.exit_code, 0) << text << ": " << r.err;
  }
  const std::vector<std::pair<std::string, std::string>> bad{
      {"FOO@90", "a signal that bash can trap"}, {"SIGFOO@90", "a signal that bash can trap"},
      {"KILL@90", "a signal that bash can trap"}, {"STOP@90", "a signal that bash can trap"},
      {"9@90", "a signal that bash can trap"},   {"0@90", "a signal that bash can trap"},
      {"65@90", "a signal that bash can trap"},  {"USR1@0", "1 to 65535 seconds"},
      {"USR1@65536", "1 to 65535 seconds"},      {"USR1@999999999999", "1 to 65535 seconds"},
      {"USR1", "SIGNAL@SECONDS"},                {"USR1@-5", "SIGNAL@SECONDS"},
      {"USR1@soon", "SIGNAL@SECONDS"},           {"@90", "SIGNAL@SECONDS"},
      {"USR1@90s", "SIGNAL@SECONDS"},            {"R:USR1@90", "SIGNAL@SECONDS"}};
  for (const auto& [text, part] : bad) {
    const std::string& signal = text;  // a structured binding cannot be captured before C++20
    const auto error = error_of([&] { submit::parse_signal(signal); });
    expect_rejected(error, "-s/--signal '" + text + "': expected ");
    expect_rejected(error, part);
    expect_rejected(error, "e.g. SIGUSR1@90");
  }
  // On the command line, with or without -r; the default stays SIGUSR1@90.
  expect_rejected(slurm_error({"-r", "-s", "FOO@90"}), "-s/--signal 'FOO@90'");
  expect_rejected(slurm_error({"-s", "FOO@90"}), "-s/--signal 'FOO@90'");
  EXPECT_EQ(submit::parse_slurm_options(with_config({})).signal, "SIGUSR1@90");
}

TEST(SubmitOptionChecks, SweepValuesAreSingleLines) {
  auto error = error_of([] { submit::expand_sweep(YAML::Load("grid:\n  data.batch_size: [\"1\\n2\"]\n"), "s.yaml"); });
  expect_rejected(error, "s.yaml:2: the sweep value of 'data.batch_size' must be a single line");
  error = error_of([] { submit::expand_sweep(YAML::Load("list:\n  - {trainer.max_epochs: \"3\\rx\"}\n"), "s.yaml"); });
  expect_rejected(error, "the sweep value of 'trainer.max_epochs' must be a single line");
  error = error_of([] { submit::expand_sweep(YAML::Load("list:\n  - {\"a\\nb\": 1}\n"), "s.yaml"); });
  expect_rejected(error, "a sweep key must be a single line");
  // A directory or a missing path is named, not a stream error.
  expect_rejected(error_of([] { submit::load_sweep("/tmp"); }), "--sweep '/tmp': not a regular file");
  expect_rejected(error_of([] { submit::load_sweep("/no/such/sweep.yaml"); }), "no such file");
}

// Resource counts: the messages name the option of the command at hand.
TEST_F(SubmitTest, NegativeResourceCountsNameTheCommandsOption) {
  auto condor = [](Args extra) {
    Args args{"-c", cfg("GN2.yaml"), "-c", cfg("GN2_cpu.yaml"), "-t", "checks"};
    args.insert(args.end(), extra.begin(), extra.end());
    return error_of([&] { submit::prepare_condor_job(submit::parse_condor_options(args), work()); });
  };
  auto slurm_job = [](Args extra) { return error_of([&] { submit::prepare_slurm_job(slurm(extra), work()); }); };
  // {error, expected part, from submit_htcondor}
  const std::vector<std::tuple<std::string, std::string, bool>> table{
      {condor({"--gpus", "-1"}), "--gpus must be 0 (CPU only) or more, got -1", true},
      {condor({"--cpus", "-2"}), "--cpus must be 0 or more, got -2", true},
      {condor({"--cpu", "--gpus", "2"}), "--cpu contradicts --gpus 2", true},
      {slurm_job({"-g", "-1"}), "-g/--gpus_per_node must be 0 (CPU only) or more, got -1", false},
      {slurm_job({"-cpt", "-2"}), "-cpt/--cpus_per_task must be 0 or more, got -2", false},
      {slurm_job({"-n", "0"}), "-n/--nodes must be at least 1, got 0", false},
  };
  for (const auto& [error, part, htcondor] : table) {
    expect_rejected(error, part);
    if (htcondor) EXPECT_FALSE(has(error, "_per_")) << error;  // submit_htcondor has no --gpus_per_node
  }
  EXPECT_FALSE(fs::exists(work() / "condor"));
  EXPECT_FALSE(fs::exists(work() / "slurm"));
}

// The review's example, end to end: exit 2, one error line, no script printed.
TEST_F(SubmitTest, AnInjectedLineIsRefusedByTheCommand) {
  auto r = run_salt({"submit_slurm", "-c", cfg("GN2.yaml"), "--dry-run", "-p", "gpu\n#SBATCH --foo\ntouch /tmp/pwned"},
                    work());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "salt: error: -p/--partition must be a single line without control characters\n");
  EXPECT_FALSE(has(r.out, "touch")) << r.out;
  auto c = run_salt({"submit_htcondor", "-c", cfg("GN2.yaml"), "--dry-run", "--requirements",
                     "x\nqueue 100\nExecutable = /bin/sh"},
                    work());
  EXPECT_EQ(c.exit_code, 2) << c.err;
  EXPECT_EQ(c.err, "salt: error: --requirements must be a single line without control characters\n");
  EXPECT_FALSE(fs::exists(work() / "slurm"));
  EXPECT_FALSE(fs::exists(work() / "condor"));
}

}  // namespace
}  // namespace salt::testing
