// Refusals docs/refusals.md listed without a test: each is one line on stderr, the
// documented exit code, and nothing written.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>

#include "core/cpu_budget.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

void expect_one_line(const ProcessResult& r, int code, const std::string& says) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
}

TEST(Refusals, SharedFilesThatAreNotThereAreNamed) {
  TempDir dir;
  const auto missing = (dir / "nowhere").string();
  expect_one_line(run_salt({"fit", "--print_config"}, dir.path(), {"SALT_SHARE_DIR=" + missing}), 2,
                  "SALT_SHARE_DIR=" + missing + ": no such folder");
  expect_one_line(run_salt({"fit", "--print_config"}, dir.path(), {"SALT_BASE_CONFIG=" + missing}), 2,
                  "SALT_BASE_CONFIG=" + missing + ": no such file");
}

TEST(Refusals, ToydataWithoutConstituentSlotsWritesNothing) {
  TempDir dir;
  expect_one_line(run_salt({"toydata", "-o", (dir / "toy").string(), "--num_train", "10", "--slots", "0"}), 2,
                  "--slots: must be a whole number from 1 to 1024, not 0");
  EXPECT_FALSE(fs::exists(dir / "toy") && !fs::is_empty(dir / "toy"));
}

TEST(Refusals, ShuffleWithTooLittleMemoryWritesNothing) {
  TempDir dir;
  write_toy_data(dir / "toy", 200, 50, 0);
  const auto out = dir / "shuffled.h5";
  expect_one_line(run_salt({"shuffle", (dir / "toy" / "pp_output_train.h5").string(), "-o", out.string(),
                            "--memory_mb", "5"}),
                  2, "--memory_mb must be at least");
  EXPECT_FALSE(fs::exists(out));
}

TEST(Refusals, OnnxMetadataOfAFileThatIsNotOnnx) {
  TempDir dir;
  write_file(dir / "model.onnx", "not a protobuf at all\n");
  expect_one_line(run_salt({"get_onnx_metadata", (dir / "model.onnx").string()}), 1, "model.onnx: not an ONNX model");
  expect_one_line(run_salt({"get_onnx_metadata", (dir / "absent.onnx").string()}), 1, "cannot read");
}

// No launcher (srun, torchrun-style variables) around a multi-node fit: refused
// before anything is read or written, since this process cannot start the others.
TEST(Refusals, SeveralNodesNeedALauncher) {
  TempDir dir;
  const auto configs = source_dir() / "configs";
  expect_one_line(run_salt({"fit", "-c", (configs / "GN2.yaml").string(), "-c", (configs / "GN2_cpu.yaml").string(),
                            "--trainer.num_nodes", "2", "--trainer.devices", "1", "--trainer.default_root_dir",
                            (dir / "logs").string(), "--force"},
                           dir.path()),
                  2, "trainer.num_nodes=2 needs a launcher that starts the processes on every node");
  EXPECT_FALSE(fs::exists(dir / "logs"));
}

TEST(Refusals, ToydataCompressionMustBeOneItWrites) {
  TempDir dir;
  expect_one_line(run_salt({"toydata", "-o", (dir / "toy").string(), "--num_train", "10", "--compression", "zstd"}), 2,
                  "--compression: zstd not in {lzf,gzip,none}");
  EXPECT_FALSE(fs::exists(dir / "toy"));
}

TEST(Refusals, ShuffleOfAFileWhoseDatasetsDisagreeInRows) {
  SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed");
  TempDir dir;
  const auto file = dir / "ragged.h5";
  auto py = run_python(R"(
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f["jets"] = np.zeros(10, dtype=[("pt", "f4")])
    f["tracks"] = np.zeros((9, 4), dtype=[("d0", "f4"), ("valid", "?")])
)",
                       {file.string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  const auto out = dir / "shuffled.h5";
  expect_one_line(run_salt({"shuffle", file.string(), "-o", out.string()}), 1,
                  file.string() + ": dataset 'tracks' has 9 rows but 'jets' has 10; salt shuffle moves a jet's rows of "
                                  "every dataset together");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);  // nothing but the input
}

TEST(Refusals, ToOnnxTrackSelectionMustBeAthenas) {
  TempDir dir;
  expect_one_line(run_salt({"to_onnx", "--ckpt_path", (dir / "none.ckpt").string(), "--track_selection", "tight"}), 2,
                  "--track_selection: tight not in {all,ip3d,");
}

// The commands below read the shipped GN2 config over toy data in their folder.
std::vector<std::string> with_gn2(std::vector<std::string> args) {
  const auto configs = source_dir() / "configs";
  for (const auto& c : {configs / "GN2.yaml", configs / "GN2_cpu.yaml"}) {
    args.push_back("-c");
    args.push_back(c.string());
  }
  return args;
}

TEST(Refusals, TestWithoutATestFile) {
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 0);
  expect_one_line(run_salt(with_gn2({"test", "--data.test_file", "null", "--ckpt_path", "model.ckpt"}), dir.path()), 2,
                  "'data.test_file' is not set: salt test needs a file to evaluate");
}

// A directory as the checkpoint (a run folder, its ckpts/) is said to be one, with
// what is expected and a checkpoint it holds (before: "does not exist" from to_onnx,
// "not a regular file" from the others), by every command that takes --ckpt_path.
TEST(Refusals, ADirectoryAsCkptPathIsSaidToBeOne) {
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 50);
  const auto run = dir / "run";
  fs::create_directories(run / "ckpts");
  write_file(run / "ckpts" / "epoch=000.ckpt", "");
  const std::string is_dir = run.string() + " is a directory, not a checkpoint: give a checkpoint file (.ckpt), e.g. " +
                             (run / "ckpts" / "epoch=000.ckpt").string();
  for (const std::string command : {"test", "validate", "predict"})
    expect_one_line(run_salt({command, "--ckpt_path", run.string()}, dir.path()), 1,
                    command + ": --ckpt_path " + is_dir);
  for (const std::string command : {"fit", "test"})
    expect_one_line(run_salt(with_gn2({command, "--ckpt_path", run.string()}), dir.path()), 1,
                    command + ": ckpt_path " + is_dir);
  expect_one_line(run_salt({"to_onnx", "--ckpt_path", run.string(), "--force"}, dir.path()), 1,
                  "to_onnx: --ckpt_path " + is_dir);
  expect_one_line(run_salt({"to_onnx", "--ckpt_path", (run / "ckpts").string(), "--force"}, dir.path()), 1,
                  "to_onnx: --ckpt_path " + (run / "ckpts").string() + " is a directory, not a checkpoint");
  EXPECT_FALSE(fs::exists(dir / "logs")) << "a run directory was made";
}

TEST(Refusals, SubmitOptionsThatCannotMakeAJob) {
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 50);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bind", "/data:/inputs"}, "--bind is only allowed with --environment singularity"},
      {{"-e", "singularity"}, "--environment singularity needs --image"},
      {{"--tag", "a/b"}, "--tag 'a/b': must be a non-empty name without '/'"},
      {{"--tag", ""}, "--tag '': must be a non-empty name without '/'"},
  };
  for (const auto& [extra, says] : cases) {
    auto args = with_gn2({"submit_slurm", "--dry-run"});
    args.insert(args.end(), extra.begin(), extra.end());
    expect_one_line(run_salt(args, dir.path()), 2, says);
  }
  const auto missing = (dir / "absent.yaml").string();
  expect_one_line(run_salt({"submit_slurm", "--config", missing, "--dry-run"}, dir.path()), 2,
                  "--config '" + missing + "': no such file");
  EXPECT_FALSE(fs::exists(dir / "slurm"));
}

TEST(Refusals, CondorSubmitMissingKeepsTheJobFilesAndNamesThem) {
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 50);
  fs::create_directories(dir / "empty_path");
  const auto r =
      run_salt(with_gn2({"submit_htcondor", "--force"}), dir.path(), {"PATH=" + (dir / "empty_path").string()});
  expect_one_line(r, 1, "condor_submit not found on PATH; the job file is " +
                            (dir / "condor" / "batch" / "batch_salt_job.job").string());
  EXPECT_TRUE(fs::exists(dir / "condor" / "batch" / "batch_salt_job.sh"));
}

// The batch systems' own commands missing or failing: one line naming the file that
// was written, which stays for a submission by hand. condor_submit is not installed
// here, so the failing one is a stand-in that fails as it does without a schedd.
TEST(Refusals, SubmittersMissingOrFailingNameTheirFiles) {
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 50);
  fs::create_directories(dir / "empty_path");
  auto r = run_salt(with_gn2({"submit_slurm", "--force"}), dir.path(), {"PATH=" + (dir / "empty_path").string()});
  const auto script = dir / "slurm" / "batch" / "sbatch_salt_job.sh";
  expect_one_line(r, 1, "sbatch not found on PATH; the job script is " + script.string() + " (submit it with sbatch)");
  EXPECT_TRUE(fs::exists(script));

  fs::create_directories(dir / "failing");
  write_file(dir / "failing" / "condor_submit", "#!/bin/sh\necho 'ERROR: Can'\\''t find address of local schedd' >&2\nexit 3\n");
  fs::permissions(dir / "failing" / "condor_submit", fs::perms::owner_all);
  r = run_salt(with_gn2({"submit_htcondor", "--force"}), dir.path(),
               {"PATH=" + (dir / "failing").string() + ":/usr/bin:/bin"});
  const auto job = dir / "condor" / "batch" / "batch_salt_job.job";
  expect_one_line(r, 1, "condor_submit " + job.string() + " failed (exit 3): ERROR: Can't find address of local schedd");
  EXPECT_TRUE(fs::exists(job));

  expect_one_line(run_salt(with_gn2({"submit_htcondor", "--force", "--runtime", "0"}), dir.path()), 2,
                  "--runtime must be a positive number of seconds");
}

// Before: a FIFO as input hung in open() (SIGTERM could not end it), /dev/zero was read
// without end, `shuffle --overwrite` renamed its output over a FIFO (as root, over
// /dev/null), and an impossible memory budget was "internal error: std::bad_alloc".
TEST(Refusals, PathsThatAreNotRegularFilesAndImpossibleSizes) {
  TempDir dir;
  write_toy_data(dir / "toy", 200, 50, 0);
  const auto fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto val = (dir / "toy" / "pp_output_val.h5").string();
  expect_one_line(run_salt({"shuffle", fifo.string(), "-o", (dir / "out.h5").string()}), 1,
                  "Expected an HDF5 file but " + fifo.string() + " is not a regular file (a device, FIFO or socket)");
  expect_one_line(run_salt({"compare_models", "--file_a", fifo.string(), "--tagger_a", "a", "--tagger_b", "b"}), 1,
                  fifo.string() + " is not a regular file");
  expect_one_line(run_salt({"shuffle", val, "-o", fifo.string(), "--overwrite"}), 1,
                  fifo.string() + " is not a regular file (a device, FIFO or socket): give the name of a file to write");
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO was replaced";
  expect_one_line(run_salt({"get_onnx_metadata", "/dev/zero"}), 1, "/dev/zero: not a regular file, not an ONNX model");
  // A budget beyond any machine is refused by its flag (it was "out of memory" after
  // reserving the budget; a budget above the data's size now reserves only the data's).
  expect_one_line(run_salt({"shuffle", val, "-o", (dir / "out.h5").string(), "--memory_mb", "999999999999"}), 2,
                  "--memory_mb 999999999999 is beyond any machine: give MiB from 10 to 16777216");
  EXPECT_FALSE(fs::exists(dir / "out.h5"));
}

// Before: "salt: internal error: filesystem error: status: File name too long [...]".
TEST(Refusals, OverLongNamesAreOneLineNamingThePath) {
  TempDir dir;
  write_toy_data(dir / "toy", 200, 50, 0);
  const auto long_name = (dir / std::string(300, 'a')).string();  // NAME_MAX is 255
  const std::vector<std::vector<std::string>> commands = {
      {"toydata", "-o", long_name, "--num_train", "10"},
      {"shuffle", (dir / "toy" / "pp_output_train.h5").string(), "-o", long_name + ".h5"},
      {"to_onnx", "--ckpt_path", long_name + ".ckpt"},
  };
  for (const auto& args : commands) {
    const auto r = run_salt(args, dir.path());
    // Its first and last 100 bytes (core/error_text.h): a path over 200 is shortened.
    expect_one_line(r, 1, "salt: error: " + long_name.substr(0, 100) + "\u2026");
    EXPECT_NE(r.err.find(": File name too long"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  }
}

// The refusals below start `salt fit` on the shipped GN2 over toy data in their
// folder, in batches of 50 so that an epoch is 4 steps; their run directories go to
// <dir>/logs, which a refusal leaves absent.
std::vector<std::string> small_fit(const TempDir& dir, std::vector<std::string> extra = {}) {
  auto args = with_gn2({"fit"});
  for (const auto* a :
       {"--data.batch_size", "50", "--trainer.max_epochs", "1", "--force", "--trainer.default_root_dir"})
    args.push_back(a);
  args.push_back((dir / "logs").string());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Before: the value went straight to LibTorch (100000 started tens of thousands of
// threads, deaf to SIGTERM for minutes; a typo was ignored or a raw std::stoi
// exception). The largest value tried is one above the range, so a regression starts
// a few threads, not thousands, and `timeout` ends a run that would hang.
TEST(Refusals, OmpNumThreadsOutsideItsRangeIsOneLine) {
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 0);
  const int cores = salt::affinity_cores();
  for (const auto& value : {std::string("abc"), std::string("0"), std::string("-2"), std::string("2.5"),
                            std::string(" 2"), std::to_string(4 * cores + 1)}) {
    std::vector<std::string> argv = {"timeout", "-s", "KILL", "120", salt_binary()};
    for (const auto& a : small_fit(dir)) argv.push_back(a);
    const auto r = run_process(argv, dir.path(), {"OMP_NUM_THREADS=" + value});
    expect_one_line(r, 2,
                    "salt: error: OMP_NUM_THREADS=" + value + ": expected a whole number from 1 to " +
                        std::to_string(4 * cores) + " (4 threads for each of the " + std::to_string(cores) +
                        " cores this process may use)");
    EXPECT_FALSE(fs::exists(dir / "logs")) << value;
  }
}

// Every switch of training/step/step_options.h, mistyped: one line naming it and what it
// takes, exit 2, no run directory. Before, SALT_MAX_STEPS_AHEAD said it its own way
// ("SALT_MAX_STEPS_AHEAD: expected ..., got 'yes'").
TEST(Refusals, EveryStepSwitchMistypedIsOneLine) {
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 0);
  const std::vector<std::pair<std::string, std::string>> switches = {
      {"SALT_HOST_TWINS", "expected 0 (the model reads the device) or 1 (the batch's host copies)"},
      {"SALT_COPY_STREAM", "expected 0 (the compute stream) or 1 (a copy stream)"},
      {"SALT_CUDA_GRAPHS", "expected 0 (eager steps) or 1 (CUDA graphs for the training steps)"},
      {"SALT_SHORT_ATTENTION", "expected 0 (flash attention) or 1 (salt-cpp's kernel for short jets)"},
      {"SALT_SEGMENT_SUM_KERNEL", "expected 0 (LibTorch's operators) or 1 (salt-cpp's kernel)"},
      {"SALT_NORM_CAST_KERNEL", "expected 0 (LibTorch's layer_norm and autocast's cast) or 1 (salt-cpp's kernel)"},
      {"SALT_CPU_BF16_STATIC_ROWS", "expected 0 (each batch's own row count) or 1 (rows padded to their bucket)"},
      {"SALT_MAX_STEPS_AHEAD", "expected a whole number from 0 to 1000"},
  };
  for (const auto& [name, takes] : switches) {
    expect_one_line(run_salt(small_fit(dir), dir.path(), {name + "=yes"}), 2,
                    "salt: error: " + name + "=yes: " + takes);
    EXPECT_FALSE(fs::exists(dir / "logs")) << name;
  }
}

// Before: SALT_CPU_BF16=nativ was read as neither value, silently (the CPU decided).
TEST(Refusals, CpuBf16TakesNativeOrEmulatedOnly) {
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 0);
  expect_one_line(run_salt(small_fit(dir), dir.path(), {"SALT_CPU_BF16=nativ"}), 2,
                  "salt: error: SALT_CPU_BF16=nativ: expected native (LibTorch's bf16 kernels) or emulated "
                  "(bf16-rounded inputs multiplied in float32)");
  EXPECT_FALSE(fs::exists(dir / "logs"));
}

// Before: both trained to the end, never validated, kept no checkpoint and exited 0.
TEST(Refusals, ValidationThatCanNeverRunIsRefusedBeforeTraining) {
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 0);
  const std::vector<std::string> across = {"--trainer.check_val_every_n_epoch", "null", "--trainer.val_check_interval",
                                           "1000000", "--trainer.max_epochs", "2"};
  expect_one_line(run_salt(small_fit(dir, across), dir.path()), 2,
                  "'trainer.val_check_interval' (1000000) with 'trainer.check_val_every_n_epoch' null counts training "
                  "batches across epochs, but this fit runs 8 ('trainer.max_epochs' 2 x 4 per epoch): validation would "
                  "never run");
  EXPECT_FALSE(fs::exists(dir / "logs"));
  const std::vector<std::string> later = {"--trainer.check_val_every_n_epoch", "3", "--trainer.val_check_interval",
                                          "0.5", "--trainer.max_epochs", "2"};
  expect_one_line(run_salt(small_fit(dir, later), dir.path()), 2,
                  "'trainer.check_val_every_n_epoch' (3) exceeds 'trainer.max_epochs' 2 and "
                  "'trainer.val_check_interval' validates within the epochs it picks: validation would never run");
  EXPECT_FALSE(fs::exists(dir / "logs"));
}

// Before: "salt: error: : No such file or directory" (a checkpoint without a config
// beside it had its embedded config written to a temporary file). Now that config
// is merged from memory: a missing TMPDIR changes nothing, the command ends as it
// does with a TMPDIR that exists.
TEST(Refusals, AMissingTmpdirChangesNothing) {
  TempDir dir;
  const auto fixture = source_dir() / "tests" / "fixtures" / "written_by_salt" / "GN2_cpu" / "ckpts";
  fs::create_directories(dir / "run" / "ckpts");
  const auto ckpt = dir / "run" / "ckpts" / "model.ckpt";
  fs::copy_file(fixture / "epoch=001-val_loss=0.92230.ckpt", ckpt);
  const auto missing = (dir / "no_such_tmp").string();
  const auto with = run_salt({"test", "--ckpt_path", ckpt.string()}, dir.path(), {"TMPDIR=" + dir.path().string()});
  const auto without = run_salt({"test", "--ckpt_path", ckpt.string()}, dir.path(), {"TMPDIR=" + missing});
  EXPECT_EQ(without.exit_code, with.exit_code) << without.err;
  const auto last_line = [](const std::string& err) { return err.substr(err.rfind("salt: error:")); };
  ASSERT_NE(without.err.find("salt: error:"), std::string::npos) << without.err;  // its data is not here
  EXPECT_EQ(last_line(without.err), last_line(with.err));
  EXPECT_EQ(without.err.find("No such file or directory\n"), std::string::npos) << without.err;
}

// Before: "<yaml>:0: the document is too large": files each within the limits merged
// into a config past them, and no file was named.
TEST(Refusals, AMergeOfConfigsPastTheLimitsNamesTheFile) {
  TempDir dir;
  for (const auto* name : {"big1", "big2", "big3"}) {
    std::string text = std::string(name) + ":\n";
    for (int m = 0; m < 40; ++m) {  // 32,000 values a file: within the 50,000 one file may have
      text += "  m" + std::to_string(m) + ":\n";
      for (int k = 0; k < 800; ++k) text += "    k" + std::to_string(k) + ": 1\n";
    }
    write_file(dir / (std::string(name) + ".yaml"), text);
  }
  const auto big2 = (dir / "big2.yaml").string();
  expect_one_line(run_salt(with_gn2({"fit", "-c", (dir / "big1.yaml").string(), "-c", big2, "-c",
                                     (dir / "big3.yaml").string(), "--print_config"}),
                           dir.path()),
                  2, "salt: error: " + big2 + ": merged with what comes before it, the config has over 50000 values");
}

// Before: "<yaml>:0: a mapping of 1200 keys": each file within the key limit, their
// merge past it, and no file named.
TEST(Refusals, AMergeOfMappingsPastTheKeyLimitNamesTheFile) {
  TempDir dir;
  for (int part = 0; part < 2; ++part) {
    std::string text = "data:\n  labels:\n";
    for (int k = 0; k < 600; ++k) text += "    k" + std::to_string(part * 600 + k) + ": [a]\n";
    write_file(dir / ("keys" + std::to_string(part) + ".yaml"), text);
  }
  const auto second = (dir / "keys1.yaml").string();
  expect_one_line(run_salt(with_gn2({"fit", "-c", (dir / "keys0.yaml").string(), "-c", second, "--print_config"}),
                           dir.path()),
                  2, "salt: error: " + second + ": merged with what comes before it, the config has a mapping of 1200 "
                     "keys ('data.labels'); salt-cpp reads at most 1000 keys in one mapping");
}

// Before: started through the dynamic loader (as some batch wrappers and profilers
// start programs), the restart that shortens OpenMP's spinning ran the loader with
// salt's arguments: "fit: cannot open shared object file", exit 127.
TEST(Refusals, AFitStartedThroughTheDynamicLoaderRestartsAsSalt) {
  const std::string loader = "/lib64/ld-linux-x86-64.so.2";
  ASSERT_TRUE(std::filesystem::exists(loader)) << loader;
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 0);
  auto args = with_gn2({loader, salt_binary(), "fit", "--trainer.fast_dev_run", "1"});
  args.insert(args.end(), {"--data.batch_size", "50"});  // after the configs, which set their own
  // OMP_NUM_THREADS=2: the restart is wanted (2 cores, OpenBLAS's own threads).
  const auto r = run_process(args, dir.path(), {"OMP_NUM_THREADS=2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("idle OpenMP threads sleep after GOMP_SPINCOUNT=10000"), std::string::npos) << r.err;
}

// The warning a fit prints where it runs inside another program and cannot restart.
void expect_trains_without_restart(const ProcessResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string line = "warning: salt runs inside another program (valgrind, an emulator) and cannot restart "
                           "itself with GOMP_SPINCOUNT=10000";
  EXPECT_NE(r.err.find(line), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(line), r.err.rfind(line)) << r.err;  // once
  EXPECT_NE(r.err.find("set GOMP_SPINCOUNT (10000 is salt's choice) to skip the restart"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("trained 50 jets"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("cannot run"), std::string::npos) << r.err;
}

// The file valgrind names for the instruction it could not run ("Illegal opcode at
// address ..., at 0x...: f() (in /usr/lib/libhwy.so.1)"), or empty.
std::string illegal_opcode_library(const std::string& err) {
  const auto opcode = err.find("Illegal opcode");
  if (opcode == std::string::npos) return {};
  const auto in = err.find("(in ", opcode);
  const auto end = err.find(')', in);
  if (in == std::string::npos || end == std::string::npos) return {};
  return err.substr(in + 4, end - in - 4);
}

std::string share_dir() {
  return (std::filesystem::path(salt_binary()).parent_path() / ".." / "share" / "salt").string();
}

// Inside valgrind /proc/self/exe is valgrind's tool, which refuses to be run directly:
// the restart made `valgrind salt fit` end in "You cannot run ... directly" (exit 1).
// Now salt says in one line why it does not restart, names the switch, and trains.
// valgrind 3.19 cannot read the build's DWARF 5, so the fit runs a copy without it.
// On a CPU whose CPUID hides RDTSCP (some AMD virtual machines) valgrind cannot run
// LibTorch at all: libhwy, loaded under Debian's LibTorch, executes RDTSCP when it
// loads. That is checked first, on `salt --version`, and is the one reason to skip;
// the next test covers the same path without valgrind on every machine.
TEST(Refusals, AFitInsideValgrindSaysWhyItDoesNotRestartAndTrains) {
  const bool have_valgrind = std::system("valgrind --version > /dev/null 2>&1") == 0;
  SALT_REQUIRE(have_valgrind, "valgrind is not installed (scripts/bootstrap.sh installs it)");
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 0);
  const auto copy = dir / "salt";
  const auto strip = run_process({"objcopy", "--strip-debug", salt_binary(), copy.string()});
  ASSERT_EQ(strip.exit_code, 0) << strip.err;
  const auto version = run_process({"valgrind", "--tool=none", "-q", copy.string(), "--version"});
  if (const auto where = illegal_opcode_library(version.err); version.exit_code == 128 + SIGILL && !where.empty() &&
                                                              where != copy.string())
    GTEST_SKIP() << "valgrind cannot run " << where << " on this CPU (an instruction its CPUID hides):\n"
                 << version.err.substr(0, 600);
  ASSERT_EQ(version.exit_code, 0) << version.err;
  auto args = with_gn2({"valgrind", "--tool=none", "-q", copy.string(), "fit", "--trainer.fast_dev_run", "1"});
  args.insert(args.end(), {"--data.batch_size", "50"});
  expect_trains_without_restart(run_process(args, dir.path(), {"OMP_NUM_THREADS=2", "SALT_SHARE_DIR=" + share_dir()}));
}

// The same path on every machine: a program that is neither salt nor a loader salt
// knows by name runs it (a copy of the loader under another name, as a bundled
// launcher would), so /proc/self/exe cannot be restarted with salt's arguments.
TEST(Refusals, AFitInsideAnotherLauncherSaysWhyItDoesNotRestartAndTrains) {
  const std::string loader = "/lib64/ld-linux-x86-64.so.2";
  ASSERT_TRUE(std::filesystem::exists(loader)) << loader;
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 0);
  const auto launcher = dir / "launcher";
  std::filesystem::copy_file(loader, launcher);
  std::filesystem::permissions(launcher, std::filesystem::perms::owner_all);
  auto args = with_gn2({launcher.string(), salt_binary(), "fit", "--trainer.fast_dev_run", "1"});
  args.insert(args.end(), {"--data.batch_size", "50"});
  expect_trains_without_restart(run_process(args, dir.path(), {"OMP_NUM_THREADS=2", "SALT_SHARE_DIR=" + share_dir()}));
}

// `salt fit | head`: once the reader had gone, the next log line's SIGPIPE killed
// the fit (exit 141) before its first checkpoint. Now it trains to the end.
TEST(Refusals, AFitWhoseLogReaderGoesAwayTrainsToTheEnd) {
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 0);
  auto args = with_gn2({"/bin/bash", "-c", "\"$0\" \"$@\" 2>&1 | head -1 > /dev/null; exit ${PIPESTATUS[0]}",
                        salt_binary(), "fit", "-ls", "piped"});
  args.insert(args.end(), {"--data.batch_size", "50", "--trainer.max_epochs", "3"});  // after the configs
  const auto r = run_process(args, dir.path(), {"OMP_NUM_THREADS=1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto ckpts = dir / "logs" / "GN2_cpu_piped" / "ckpts";
  ASSERT_TRUE(std::filesystem::is_directory(ckpts));
  int epochs = 0;
  for (const auto& e : std::filesystem::directory_iterator(ckpts)) epochs += e.path().filename().string().rfind("epoch=", 0) == 0;
  EXPECT_EQ(epochs, 3);  // one per epoch
}

// metadata.yaml tells a user's OPENBLAS_THREAD_TIMEOUT from the one salt sets when it
// restarts with a short spin (both "4"): before, the user's was recorded as salt's.
TEST(SwitchBookkeeping, AUsersOwnBlasTimeoutIsRecordedAsTheUsers) {
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 0);
  auto source_of = [&](const std::vector<std::string>& env, const std::string& suffix) -> std::string {
    auto args = with_gn2({"fit", "--trainer.max_epochs", "1", "-ls", suffix, "--force"});
    args.insert(args.end(), {"--data.batch_size", "50"});
    const auto r = run_salt(args, dir.path(), env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto meta = YAML::LoadFile((dir / "logs" / ("GN2_cpu_" + suffix) / "metadata.yaml").string());
    const auto entry = meta["step_options"]["openblas_thread_timeout"];
    EXPECT_EQ(entry["value"].as<std::string>(), "4") << YAML::Dump(meta["step_options"]);
    return entry["source"].as<std::string>();
  };
  EXPECT_EQ(source_of({"OMP_NUM_THREADS=2", "OPENBLAS_THREAD_TIMEOUT=4"}, "users"), "environment");
  EXPECT_EQ(source_of({"OMP_NUM_THREADS=2"}, "salts"), "default");  // set by the restart
}

// Before: a 10,000-character key was echoed whole, twice; now every word of an error
// is at most ~200 characters, its first and last 100 bytes around an ellipsis.
TEST(Refusals, AnOverlongKeyIsShortenedInTheError) {
  const std::string key(10000, 'k');
  const auto r = run_salt({"fit", "--trainer." + key, "1"});
  expect_one_line(r, 2,
                  "salt: error: command line '--trainer." + std::string(89, 'k') + "\u2026" + std::string(100, 'k') +
                      " 1': 'trainer." + std::string(91, 'k') + "\u2026" + std::string(98, 'k') + "': unknown key");
  EXPECT_LT(r.err.size(), 600u) << r.err.substr(0, 1000);
}

// Before: LibTorch's out-of-memory or "Storage size calculation overflowed" (muP),
// HDF5's "filters can only be used with chunked layout" (toydata), naming no key.
TEST(Refusals, ImpossibleWidthsAndSlotsNameTheirKeyAndRange) {
  TempDir dir;
  write_toy_data(dir / "data" / "toy", 200, 50, 0);
  write_file(dir / "mup.yaml", R"(
model:
  mup_config:
    shape_path: shapes
    embed_dim: {apply_to: [init_nets, encoder], parameter_name: [output_size, embed_dim], parameter_base: 64,
                parameter_delta: 16}
)");
  for (const std::string width : {"100000000", "9223372036854775807", "99999999999999999999"}) {
    auto args =
        with_gn2({"mup", "-c", (dir / "mup.yaml").string(), "--model.mup_config.embed_dim.parameter_base", width});
    expect_one_line(run_salt(args, dir.path()), 2,
                    "salt: error: model.mup_config.embed_dim.parameter_base: expected a width from 1 to 16384, got '" +
                        width + "'");
  }
  EXPECT_FALSE(fs::exists(dir / "shapes"));

  const auto gn2 = (source_dir() / "configs" / "GN2.yaml").string();
  const auto out = (dir / "toy2").string();
  expect_one_line(run_salt({"toydata", "-o", out, "-c", gn2, "--num_train", "10", "--slots", "1000000000"}), 2,
                  "--slots: must be a whole number from 1 to 1024, not 1000000000");
  write_file(dir / "slots.yaml", "data:\n  num_inputs: {tracks: 100000000}\n");
  expect_one_line(
      run_salt({"toydata", "-o", out, "-c", gn2, "-c", (dir / "slots.yaml").string(), "--num_train", "10"}), 2,
      "salt: error: data.num_inputs.tracks: salt toydata writes 1 to 1024 slots, got 100000000");
  EXPECT_TRUE(!fs::exists(out) || fs::is_empty(out));
}

}  // namespace
}  // namespace salt::testing
