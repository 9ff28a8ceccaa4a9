// The adversarial campaign's failures, replayed (issue: nothing lost, nothing
// silently wrong): simultaneous starts, names that are paths, damaged
// checkpoints, temp files of killed processes.
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>

#include "training/checkpoints/checkpoint.h"
#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

// One epoch of two batches: enough to write a checkpoint, quick enough to start many.
std::vector<std::string> tiny(std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"--trainer.max_epochs", "1", "--trainer.limit_train_batches", "2",
                                "--trainer.limit_val_batches", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

void flip_byte(const fs::path& file, std::streamoff at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c = 0;
  f.get(c);
  f.seekp(at);
  f.put(static_cast<char>(c ^ 0x10));
}

}  // namespace

class Reliability : public FitTest {
 protected:
  // Process i runs with seed_everything 100 + i, so each config.yaml tells whose it is.
  std::vector<ProcessResult> start_together(int n, const std::vector<std::string>& extra) {
    std::vector<std::unique_ptr<BackgroundProcess>> procs;
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> argv{salt::testing::salt_binary(), "fit", "--seed_everything", std::to_string(100 + i)};
      for (const auto& a : small_gn2(tiny(extra))) argv.push_back(a);
      procs.push_back(std::make_unique<BackgroundProcess>(argv, dir.path(), std::vector<std::string>{"OMP_NUM_THREADS=1"}));
    }
    std::vector<ProcessResult> results;
    for (auto& p : procs) results.push_back(p->wait());
    return results;
  }
};

// Before: runs started in the same second shared one directory (13 of 15 trials).
TEST_F(Reliability, SimultaneousStartsEachGetTheirOwnRunDirectory) {
  const int n = 6;
  const auto results = start_together(n, {});
  for (const auto& r : results) ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dirs = runs();
  ASSERT_EQ(dirs.size(), static_cast<size_t>(n));
  std::set<std::string> seeds;
  for (const auto& run : dirs) {
    EXPECT_TRUE(fs::exists(run / "config.yaml")) << run;
    EXPECT_EQ(checkpoints(run).size(), 1u) << run;  // its own checkpoint, no one else's
    seeds.insert(YAML::LoadFile((run / "config.yaml").string())["seed_everything"].as<std::string>());
  }
  EXPECT_EQ(seeds.size(), static_cast<size_t>(n)) << "each config.yaml must be its own run's";
}

// Before: two runs with the same -ls both exited 0 into one directory.
TEST_F(Reliability, SimultaneousStartsWithOneLogSuffixAdmitOnlyOne) {
  const auto results = start_together(4, {"-ls", "same"});
  int ok = 0;
  for (const auto& r : results) {
    if (r.exit_code == 0) {
      ++ok;
      continue;
    }
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_TRUE(r.err.find("in use by another salt run") != std::string::npos ||
                r.err.find("already exists; use --overwrite_config") != std::string::npos)
        << r.err;
  }
  EXPECT_EQ(ok, 1);
  ASSERT_EQ(runs().size(), 1u);
  EXPECT_EQ(checkpoints(runs()[0]).size(), 1u);
}

// Before: --name ../../../x put the run directory outside default_root_dir.
TEST_F(Reliability, NamesThatArePathsAreRefused) {
  for (const auto& extra : std::vector<std::vector<std::string>>{{"--name", "../../escaped"},
                                                                 {"--name", ".."},
                                                                 {"-ls", "a/b"},
                                                                 {"-ls", ".."}}) {
    auto r = salt("fit", small_gn2(tiny(extra)));
    EXPECT_EQ(r.exit_code, 2) << extra[1];
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("is not a name"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("command line"), std::string::npos) << "names where the value came from: " << r.err;
  }
  // --trainer.default_root_dir '' used to become logs silently (an empty argument read as null).
  for (const auto& extra : std::vector<std::vector<std::string>>{{"--trainer.default_root_dir", ""},
                                                                 {"--trainer.default_root_dir="}}) {
    auto r = salt("fit", small_gn2(tiny(extra)));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("'trainer.default_root_dir': expected a file path, got an empty string"), std::string::npos)
        << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "escaped"));
  EXPECT_FALSE(fs::exists(dir / "logs"));
}

// Before: one flipped byte per tensor loaded fine and validated to val/loss 93.9.
TEST_F(Reliability, DamagedCheckpointIsRefusedEverywhere) {
  auto r = salt("fit", small_gn2(tiny({"-ls", "ok"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = dir / "logs" / "GN2_cpu_ok";
  const auto good = checkpoints(run).at(0);
  const auto bad = dir / "bad.ckpt";
  fs::copy_file(good, bad);
  flip_byte(bad, static_cast<std::streamoff>(fs::file_size(bad) / 2));  // inside the tensors' data
  const auto config = (run / "config.yaml").string();
  for (const auto& [command, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"test", {"-c", config, "--ckpt_path", bad.string()}},
           {"validate", {"-c", config, "--ckpt_path", bad.string()}},
           {"fit", {"-c", config, "--ckpt_path", bad.string(), "-ls", "resumed"}},
           {"to_onnx", {"--ckpt_path", bad.string(), "--config", config, "--force", "--output", (dir / "x.onnx").string()}}}) {
    auto bad_run = salt(command, args);
    EXPECT_NE(bad_run.exit_code, 0) << command;
    EXPECT_EQ(error_lines(bad_run.err), 1) << command << ": " << bad_run.err;
    EXPECT_NE(bad_run.err.find("bad.ckpt: damaged file (entry"), std::string::npos) << command << ": " << bad_run.err;
    EXPECT_NE(bad_run.err.find("fails its CRC-32 check"), std::string::npos) << command << ": " << bad_run.err;
  }
  EXPECT_FALSE(fs::exists(dir / "logs" / "GN2_cpu_resumed"));
  EXPECT_FALSE(fs::exists(dir / "x.onnx"));
  // A cut checkpoint (a copy that stopped early) is refused too.
  fs::resize_file(bad, fs::file_size(bad) - 100);
  auto cut = salt("test", {"-c", config, "--ckpt_path", bad.string()});
  EXPECT_NE(cut.err.find("bad.ckpt: damaged file"), std::string::npos) << cut.err;
  // The intact one still loads.
  EXPECT_EQ(salt("validate", {"-c", config, "--ckpt_path", good.string()}).exit_code, 0);
}

// Before: a real checkpoint whose hyper_parameters held themselves, or nested
// 100,000 dicts, or a million lists under a key salt-cpp does not read, was a
// SIGSEGV in every command that opened it (core/nesting.h).
TEST_F(Reliability, CheckpointsNestedTooDeeplyOrHoldingThemselvesAreOneLineEverywhere) {
  ASSERT_TRUE(have_python_module("torch")) << "python3-torch is not installed (scripts/bootstrap.sh installs it)";
  auto r = salt("fit", small_gn2(tiny({"-ls", "ok"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = dir / "logs" / "GN2_cpu_ok";
  auto made = run_python(R"(
import pickle, sys, threading, torch, types
sys.setrecursionlimit(10**7)
threading.stack_size(1 << 30)  # deep values recurse: a thread with a large stack
# Python's own pickler: the C one (_pickle) stops at a fixed C depth from Python 3.12 on.
deep_pickle = types.SimpleNamespace(Pickler=pickle._Pickler, Unpickler=pickle._Unpickler, __name__="pickle")
errors = []

def work():
  try:
    good, out = sys.argv[1], sys.argv[2]
    ckpt = torch.load(good)
    hp = ckpt["hyper_parameters"]
    hp["again"] = hp
    torch.save(ckpt, out + "/cyclic.ckpt")
    del hp["again"]
    deep = inner = {}
    for _ in range(100000):
        inner["a"] = {}
        inner = inner["a"]
    hp["deep"] = deep
    torch.save(ckpt, out + "/deep.ckpt", pickle_module=deep_pickle)
    del hp["deep"]
    lists = inner = []
    for _ in range(1000000):
        inner.append([])
        inner = inner[0]
    ckpt["unknown"] = lists
    torch.save(ckpt, out + "/lists.ckpt", pickle_module=deep_pickle)
  except BaseException as e:  # a thread's error does not fail the process by itself
    errors.append(e)

t = threading.Thread(target=work)
t.start()
t.join()
if errors:
    raise errors[0]
)",
                         {checkpoints(run).at(0).string(), dir.path().string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto config = (run / "config.yaml").string();
  for (const auto& [file, says] : std::vector<std::pair<std::string, std::string>>{
           {"cyclic.ckpt", "hyper_parameters.again: contains itself"},
           {"deep.ckpt", "hyper_parameters.deep.a.a.a"},
           {"lists.ckpt", "unknown.0.0.0"}}) {
    const auto ckpt = (dir / file).string();
    for (const auto& [command, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"test", {"--ckpt_path", ckpt}},
             {"validate", {"-c", config, "--ckpt_path", ckpt}},
             {"predict", {"-c", config, "--ckpt_path", ckpt}},
             {"fit", {"-c", config, "--ckpt_path", ckpt, "-ls", "resumed"}},
             {"to_onnx", {"--ckpt_path", ckpt, "--force", "--output", (dir / "x.onnx").string()}}}) {
      auto bad = salt(command, args);
      EXPECT_EQ(bad.exit_code, 1) << file << " " << command << ": " << bad.err;
      EXPECT_EQ(error_lines(bad.err), 1) << file << " " << command << ": " << bad.err;
      EXPECT_NE(bad.err.find(file + ": not a readable checkpoint"), std::string::npos) << command << ": " << bad.err;
      EXPECT_NE(bad.err.find(says), std::string::npos) << command << ": " << bad.err;
      EXPECT_LT(bad.err.size(), 400u) << "the path is cut short: " << bad.err;
    }
  }
  EXPECT_FALSE(fs::exists(dir / "logs" / "GN2_cpu_resumed"));
  EXPECT_FALSE(fs::exists(dir / "x.onnx"));
}

// Before: a checkpoint a few numbers away from a real one (a negative or huge
// epoch, an optimizer state for parameter 10^9, a moment or an RNG state of the
// wrong size, a wrongly shaped SWA average) was blamed on max_epochs or on "a
// size in the config", ended in LibTorch's broadcast or RNG message, or trained
// on a broadcast average. Each is one line naming the file and the entry, before
// any run folder is made.
TEST_F(Reliability, ResumingFromAlteredCheckpointsNamesTheEntry) {
  ASSERT_TRUE(have_python_module("torch")) << "python3-torch is not installed (scripts/bootstrap.sh installs it)";
  const std::string swa = "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.StochasticWeightAveraging, "
                          "init_args: {swa_lrs: 1e-3, swa_epoch_start: 1, annealing_epochs: 1}}";
  auto r = salt("fit", small_gn2(tiny({"-ls", "ok", "--trainer.max_epochs", "2", swa})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = dir / "logs" / "GN2_cpu_ok";
  auto made = run_python(R"(
import copy, sys, torch
good, out = torch.load(sys.argv[1]), sys.argv[2]
def altered(name, change):
    c = copy.deepcopy(good)
    change(c)
    torch.save(c, out + "/" + name + ".ckpt")
altered("negative_epoch", lambda c: c.update(epoch=-3))
altered("huge_epoch", lambda c: c.update(epoch=10**15))
altered("last_epoch", lambda c: c["lr_schedulers"][0].update(last_epoch=-5))
def far_state(c):
    state = c["optimizer_states"][0]["state"]
    state[10**9] = state[0]
altered("far_state", far_state)
altered("moment", lambda c: c["optimizer_states"][0]["state"][0].update(exp_avg=torch.zeros(1)))
altered("rng", lambda c: c["salt_cpp"].update(cpu_rng_state=torch.zeros(100, dtype=torch.uint8)))
def order(c):  # a mid-epoch checkpoint whose batch order names no batch of the file
    n = c["loops"]["fit_loop"]["epoch_loop.batch_progress"]["current"]["completed"]
    c.update(global_step=1)  # one batch into epoch 0, the schedule where it was then
    c["lr_schedulers"][0].update(last_epoch=1)
    c["salt_cpp"].update(batch_in_epoch=1, epoch_order=torch.full((n,), n, dtype=torch.int64))
altered("order", order)
def swa(c):
    avg = c["callbacks"]["StochasticWeightAveraging"]["average_model_state"]
    key = next(k for k, v in avg.items() if v.dim() == 2)
    avg[key] = avg[key][:1]
altered("swa", swa)
)",
                         {checkpoints(run).at(0).string(), dir.path().string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto config = (run / "config.yaml").string();
  for (const auto& [file, says] : std::vector<std::pair<std::string, std::string>>{
           {"negative_epoch", "'epoch' is -3, not a count a run reaches (0 to 2^40)"},
           {"huge_epoch", "'epoch' is 1000000000000000, not a count"},
           {"last_epoch", "'lr_schedulers[0].last_epoch' is -5"},
           {"far_state", "an entry for parameter 1000000000, but its param_groups list"},
           {"moment", "has exp_avg of shape [1] but the parameter is ["},
           {"rng", "salt_cpp.cpu_rng_state holds 100 bytes, not a state of torch's CPU generator"},
           {"order", ": salt_cpp.epoch_order: a batch order of"},
           {"swa", "the state of callback StochasticWeightAveraging cannot be read (StochasticWeightAveraging's "
                   "average_model_state '"}}) {
    const auto ckpt = dir / (file + ".ckpt");
    auto bad = salt("fit", {"-c", config, "--ckpt_path", ckpt.string(), "-ls", "resumed"});
    EXPECT_EQ(bad.exit_code, 1) << file << ": " << bad.err;
    EXPECT_EQ(error_lines(bad.err), 1) << file << ": " << bad.err;
    EXPECT_NE(bad.err.find(ckpt.string() + ":"), std::string::npos) << file << ": " << bad.err;
    EXPECT_NE(bad.err.find(says), std::string::npos) << file << ": " << bad.err;
    EXPECT_FALSE(fs::exists(dir / "logs" / "GN2_cpu_resumed")) << file;
  }
}

// Before: a checkpoint given alone whose embedded config was bad was reported
// under the name of a temporary file, deleted by the time the user read it.
TEST_F(Reliability, ACheckpointsOwnConfigIsNamedByTheCheckpointInErrors) {
  ASSERT_TRUE(have_python_module("torch")) << "python3-torch is not installed (scripts/bootstrap.sh installs it)";
  auto r = salt("fit", small_gn2(tiny({"-ls", "ok"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::create_directories(dir / "alone");
  const auto ckpt = dir / "alone" / "model.ckpt";  // no config.yaml above it
  auto made = run_python(R"(
import sys, torch
c = torch.load(sys.argv[1])
c["salt_cpp"]["config"] = c["salt_cpp"]["config"].replace("trainer:", "frobnicate: 1\ntrainer:", 1)
torch.save(c, sys.argv[2])
)",
                         {checkpoints(dir / "logs" / "GN2_cpu_ok").at(0).string(), ckpt.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  for (const std::string command : {"test", "to_onnx"}) {
    std::vector<std::string> args{"--ckpt_path", ckpt.string()};
    if (command == "to_onnx") args.push_back("--force");  // a build from an uncommitted tree
    auto bad = salt(command, args);
    EXPECT_EQ(bad.exit_code, 2) << command << ": " << bad.err;
    EXPECT_EQ(error_lines(bad.err), 1) << command << ": " << bad.err;
    EXPECT_NE(bad.err.find(ckpt.string() + " (the config it carries):"), std::string::npos) << command << ": " << bad.err;
    EXPECT_NE(bad.err.find("'frobnicate': unknown key"), std::string::npos) << command << ": " << bad.err;
  }
}

// Before: .<file>.tmp.<pid>.<n> files of killed runs stayed forever.
TEST_F(Reliability, TempFilesOfDeadProcessesAreRemovedWhenTheRunDirectoryIsReused) {
  ASSERT_EQ(salt("fit", small_gn2(tiny({"-ls", "again"}))).exit_code, 0);
  const auto run = dir / "logs" / "GN2_cpu_again";
  const auto dead = run / "ckpts" / ".epoch=000-val_loss=1.00000.ckpt.tmp.999999999.0";  // above any pid_max
  const auto dead_top = run / ".metrics.csv.tmp.999999998.3";
  const auto alive = run / "ckpts" / (".x.ckpt.tmp." + std::to_string(getpid()) + ".0");  // this test is alive
  for (const auto& f : {dead, dead_top, alive}) write_file(f, "partial");
  auto r = salt("fit", small_gn2(tiny({"-ls", "again", "-oc"})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("removed 2 temp file(s)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(dead_top));
  EXPECT_TRUE(fs::exists(alive));
}

// Before: a training file truncated during a fit went unnoticed, exit 0.
TEST_F(Reliability, AnInputFileChangedDuringTheRunStopsItAndKeepsTheCheckpoints) {
  std::vector<std::string> argv{salt::testing::salt_binary(), "fit"};
  for (const auto& a : small_gn2({"--trainer.max_epochs", "200", "-ls", "changing"})) argv.push_back(a);
  BackgroundProcess p(argv, dir.path(), {"OMP_NUM_THREADS=1"});
  const auto run = dir / "logs" / "GN2_cpu_changing";
  for (int i = 0; i < 6000 && !(fs::exists(run / "ckpts") && !checkpoints(run).empty()); ++i) usleep(10000);
  ASSERT_FALSE(checkpoints(run).empty());
  const auto train = dir / "data" / "toy" / "pp_output_train.h5";
  const auto size = fs::file_size(train);
  fs::resize_file(train, size - size / 4);  // a quota hit, a copy cut short
  auto r = p.wait();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("pp_output_train.h5 changed during the run (size " + std::to_string(size) + " -> "),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(checkpoints(run).empty());
}

// The campaign's unclear errors, each now naming its cause.
TEST_F(Reliability, UnclearErrorsNameTheirCause) {
  // A key with no value that is no key at all: "unknown key", not "needs a value".
  auto r = salt("fit", {"--frobnicate"});
  EXPECT_NE(r.err.find("'frobnicate': unknown key"), std::string::npos) << r.err;
  r = salt("fit", small_gn2({"--trainer.max_epoch"}));
  EXPECT_NE(r.err.find("'trainer.max_epoch': unknown key; did you mean 'max_epochs'"), std::string::npos) << r.err;
  r = salt("fit", small_gn2({"--trainer.max_epochs"}));
  EXPECT_NE(r.err.find("needs a value"), std::string::npos) << r.err;

  // An input with no variables: before, "InitNet: input 'tracks' missing from the batch" at the first step.
  r = salt("fit", small_gn2(tiny({"--data.variables.tracks=[]"})));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("input 'tracks' has no variables (data.variables.tracks is empty)"), std::string::npos) << r.err;

  // A norm std of 1e-30 used to surface as a non-finite loss naming no variable.
  auto norm = read_file(dir / "data" / "toy" / "norm_dict.yaml");
  const auto at = norm.find("std:", norm.find("d0:"));
  ASSERT_NE(at, std::string::npos) << norm;
  norm.replace(at, norm.find('\n', at) - at, "std: 1.0e-30");
  write_file(dir / "tiny_std.yaml", norm);
  r = salt("fit", small_gn2(tiny({"--data.norm_dict", (dir / "tiny_std.yaml").string()})));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("Standard deviation 1e-30 for variable '"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is too small"), std::string::npos) << r.err;
}

// Model sizes beyond the machine. Before: 10^8 encoder layers filled the memory for
// minutes, deaf to SIGTERM, until the OOM killer ended the run without a word; 10^9
// registers gave LibTorch's "[enforce fail at alloc_cpu.cpp:75] err == 0. ...".
TEST_F(Reliability, ModelSizesBeyondTheMachineAreOneLine) {
  auto r = salt("fit", small_gn2(tiny({"--model.model.encoder.num_layers", "100000000"})));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("Transformer: num_layers 100000000: layers of "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("TiB, more than this machine's "), std::string::npos) << r.err;
  r = salt("fit", small_gn2(tiny({"--model.model.encoder.num_registers", "1000000000"})));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  // 10^9 registers of the small GN2's 64 floats: 2.56e11 bytes.
  EXPECT_NE(r.err.find("salt: error: out of memory (an allocation of 238.4 GiB failed): a size in the config"),
            std::string::npos)
      << r.err;
}

// Before: bytes flipped in an LZF chunk trained silently (LZF has no checksum). What
// such garbage looks like to the reader: values far from the norm dict's range, made
// here by a norm dict for other data (tests/data/damaged_data_test.cpp damages chunks).
TEST_F(Reliability, InputsFarOutsideTheNormDictAreNamedByFileDatasetAndRow) {
  auto norm = read_file(dir / "data" / "toy" / "norm_dict.yaml");
  const auto at = norm.find("mean:", norm.find("d0:"));
  ASSERT_NE(at, std::string::npos) << norm;
  norm.replace(at, norm.find('\n', at) - at, "mean: 1.0e+5");
  write_file(dir / "far_mean.yaml", norm);
  const auto train = (dir / "data" / "toy" / "pp_output_train.h5").string();
  auto r = salt("fit", small_gn2(tiny({"--data.norm_dict", (dir / "far_mean.yaml").string(), "--data.max_input_sigma",
                                       "1e5"})));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("tracks.d0 = "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" of dataset 'tracks' in " + train + " lies "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(data.max_input_sigma is 100000)"), std::string::npos) << r.err;
  // By default a warning, once, and the run goes on with the data as they are.
  r = salt("fit", small_gn2(tiny({"--data.norm_dict", (dir / "far_mean.yaml").string(), "-ls", "warned"})));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto warning = r.err.find("of dataset 'tracks' in " + train + " lies ");
  EXPECT_NE(warning, std::string::npos) << r.err;
  EXPECT_EQ(warning, r.err.rfind("of dataset 'tracks' in " + train + " lies ")) << "once per file: " << r.err;
}

TEST_F(Reliability, TracksWithoutValidAndNonFiniteValuesNameTheMissingField) {
  SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed");
  const auto file = dir / "no_valid.h5";
  auto py = run_python(R"(
import sys, h5py, numpy as np
src, dst = sys.argv[1], sys.argv[2]
with h5py.File(src) as f, h5py.File(dst, "w") as g:
    g.attrs.update(f.attrs)
    for name, ds in f.items():
        data = ds[:]
        if name == "tracks":
            keep = [n for n in data.dtype.names if n != "valid"]
            pad = ~data["valid"]
            data = data[keep].copy()
            for n in keep:
                if data.dtype[n].kind == "f":
                    data[n][pad] = np.nan  # padding as NaN, as some writers leave it
        g.create_dataset(name, data=data).attrs.update(ds.attrs)
)", {(dir / "data" / "toy" / "pp_output_train.h5").string(), file.string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  auto r = salt("fit", small_gn2(tiny({"--data.train_file", file.string()})));
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("Non-finite inputs for 'tracks'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("has no 'valid' field"), std::string::npos) << r.err;
}

// Virtual datasets as users write them (h5py): before, a mapping onto itself
// overflowed the stack inside HDF5 (SIGSEGV), and what a member lacked was read as
// zeros and trained on. Each is now one line naming the file, member and dataset.
TEST_F(Reliability, VirtualDatasetsThatHdf5WouldReadAsZerosOrNeverFinishAreNamed) {
  SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed");
  const auto train = (dir / "data" / "toy" / "pp_output_train.h5").string();
  auto py = run_python(R"(
import sys, h5py, numpy as np
src, out = sys.argv[1], sys.argv[2]
f = h5py.File(src)
def vds(path, mapping, extra=None):  # mapping: dataset -> (member file, source name, source shape)
    with h5py.File(path, "w") as g:
        g.attrs.update(f.attrs)
        for name, ds in f.items():
            if name in mapping:
                member, source, shape = mapping[name]
                lay = h5py.VirtualLayout(shape=ds.shape, dtype=ds.dtype)
                lay[:] = h5py.VirtualSource(member, source, shape=shape)[: ds.shape[0]]
                g.create_virtual_dataset(name, lay).attrs.update(ds.attrs)
            else:
                g.create_dataset(name, data=ds[:]).attrs.update(ds.attrs)
jets, tracks = f["jets"].shape, f["tracks"].shape
vds(out + "/self.h5", {"jets": (".", "jets", jets)})
vds(out + "/a.h5", {"tracks": (out + "/b.h5", "tracks", tracks)})
vds(out + "/b.h5", {"tracks": (out + "/a.h5", "tracks", tracks)})
with h5py.File(out + "/jets_only.h5", "w") as g:
    g.create_dataset("jets", data=f["jets"][:])
    t = f["tracks"][:]
    keep = [n for n in t.dtype.names if n != "d0"]
    g.create_dataset("tracks_no_d0", data=t[keep].copy())
    g.create_dataset("tracks_half", data=t[: tracks[0] // 2])
vds(out + "/no_dataset.h5", {"tracks": (out + "/jets_only.h5", "tracks", tracks)})
vds(out + "/no_field.h5", {"tracks": (out + "/jets_only.h5", "tracks_no_d0", tracks)})
vds(out + "/fewer_rows.h5", {"tracks": (out + "/jets_only.h5", "tracks_half", tracks)})
with h5py.File(out + "/whole_short.h5", "w") as g:  # all of a 1000-row source onto 2000 rows
    g.attrs.update(f.attrs)
    for name, ds in f.items():
        if name == "tracks":
            lay = h5py.VirtualLayout(shape=ds.shape, dtype=ds.dtype)
            lay[:] = h5py.VirtualSource(out + "/jets_only.h5", "tracks_half", shape=ds.shape)
            g.create_virtual_dataset(name, lay).attrs.update(ds.attrs)
        else:
            g.create_dataset(name, data=ds[:]).attrs.update(ds.attrs)
with h5py.File(out + "/unmapped_rows.h5", "w") as g:  # 2000 rows, the first 1000 mapped
    g.attrs.update(f.attrs)
    for name, ds in f.items():
        if name == "tracks":
            lay = h5py.VirtualLayout(shape=ds.shape, dtype=ds.dtype)
            lay[: tracks[0] // 2] = h5py.VirtualSource(out + "/jets_only.h5", "tracks_half", shape=(tracks[0] // 2,) + tracks[1:])
            g.create_virtual_dataset(name, lay).attrs.update(ds.attrs)
        else:
            g.create_dataset(name, data=ds[:]).attrs.update(ds.attrs)
)", {train, dir.path().string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  const auto in_dir = [&](const char* name) { return (dir / name).string(); };
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"self.h5", in_dir("self.h5") + ": dataset 'jets' is a virtual dataset that maps onto itself (through " +
                      in_dir("self.h5") + " 'jets')"},
      {"a.h5", in_dir("b.h5") + ": dataset 'tracks' is a virtual dataset that maps onto itself (through " +
                   in_dir("a.h5") + " 'tracks')"},
      {"no_dataset.h5", in_dir("no_dataset.h5") + ": member file " + in_dir("jets_only.h5") +
                            " of dataset 'tracks' has no dataset 'tracks' (HDF5 would read zeros for its rows)"},
      {"no_field.h5", "of dataset 'tracks': its 'tracks_no_d0' has no field 'd0' (HDF5 would read zeros for it)"},
      {"fewer_rows.h5", "of dataset 'tracks': its 'tracks_half' has 1000 rows, the virtual dataset reads 2000"},
      // Before: read as far as the source went, then HDF5's "insufficient elements in
      // destination selection" in the middle of an epoch; and rows no member fills
      // trained as zeros, exit 0.
      {"whole_short.h5", "of dataset 'tracks': its 'tracks_half' has 1000 rows, the virtual dataset reads 2000"},
      {"unmapped_rows.h5", in_dir("unmapped_rows.h5") + ": rows 1000..2000 of dataset 'tracks' map to no member file "
                                                        "(HDF5 would read its fill value for them)"},
  };
  for (const auto& [file, message] : cases) {
    auto r = salt("fit", small_gn2(tiny({"--data.train_file", in_dir(file)})));
    EXPECT_EQ(r.exit_code, 1) << file << ": " << r.err;
    EXPECT_EQ(error_lines(r.err), 1) << file << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << file << ": " << r.err;
    EXPECT_TRUE(runs().empty()) << file;
  }
}

// Before: a `valid` stored as float32 was read by its first byte (0 for 1.0f):
// every track was padding. Now by its value, as numpy's astype(bool) reads it.
TEST_F(Reliability, AFloatValidFieldTrainsAsTheBoolOne) {
  SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed");
  const auto file = dir / "float_valid.h5";
  auto py = run_python(R"(
import sys, h5py, numpy as np
with h5py.File(sys.argv[1]) as f, h5py.File(sys.argv[2], "w") as g:
    g.attrs.update(f.attrs)
    for name, ds in f.items():
        data = ds[:]
        if name == "tracks":
            types = [(n, "<f4" if n == "valid" else data.dtype[n]) for n in data.dtype.names]
            data = data.astype(types)
        g.create_dataset(name, data=data).attrs.update(ds.attrs)
)", {(dir / "data" / "toy" / "pp_output_train.h5").string(), file.string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  ASSERT_EQ(salt("fit", small_gn2(tiny({"-ls", "bool"}))).exit_code, 0);
  auto r = salt("fit", small_gn2(tiny({"-ls", "float", "--data.train_file", file.string()})));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto a = training::load_checkpoint(checkpoints(dir / "logs" / "GN2_cpu_bool").back());
  const auto b = training::load_checkpoint(checkpoints(dir / "logs" / "GN2_cpu_float").back());
  ASSERT_EQ(a.state_dict.size(), b.state_dict.size());
  for (std::size_t i = 0; i < a.state_dict.size(); ++i)
    EXPECT_TRUE(torch::equal(a.state_dict[i].second, b.state_dict[i].second)) << a.state_dict[i].first;
}

// Before: a full tmpfs for move_files_temp said "Input/output error".
TEST_F(Reliability, AFullScratchFileSystemSaysNoSpace) {
  const auto small = dir / "small_tmpfs";
  fs::create_directories(small);
  const bool mounted =
      geteuid() == 0 && std::system(("mount -t tmpfs -o size=64k tmpfs " + small.string() + " 2>/dev/null").c_str()) == 0;
  SALT_REQUIRE(mounted, "root, to mount a small tmpfs");
  auto r = salt("fit", small_gn2(tiny({"--data.move_files_temp", (small / "copies").string(), "-ls", "nospace"})));
  std::system(("umount " + small.string()).c_str());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("data.move_files_temp: no space for"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pp_output_train.h5"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "logs" / "GN2_cpu_nospace"));
}

// A resume at another batch_size changes the steps per epoch. The plan check used
// to estimate the steps left as (this run's total - the checkpoint's step), which
// undercounts when the epochs shrink: the run was accepted and stepped past the
// checkpoint's one-cycle schedule. Now the steps this run takes are counted.
TEST_F(Reliability, ResumeAtAnotherBatchSizeCountsTheStepsItWillTake) {
  auto a = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "a"}));  // 8 steps per epoch, 16 planned
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto run = dir / "logs" / "GN2_cpu_a";
  const auto first_epoch = checkpoints(run).at(0);
  ASSERT_EQ(training::load_checkpoint(first_epoch).global_step, 8);

  // batch_size 500: 4 steps per epoch; epochs 1..3 take 12 steps, 4 more than the 8 left.
  auto past = salt("fit", {"-c", (run / "config.yaml").string(), "--ckpt_path", first_epoch.string(),
                           "--data.batch_size", "500", "--trainer.max_epochs", "4", "-ls", "past"});
  EXPECT_EQ(past.exit_code, 2);
  EXPECT_EQ(error_lines(past.err), 1) << past.err;
  EXPECT_NE(past.err.find("12 more optimizer steps but the checkpoint's one-cycle schedule has 8 left"),
            std::string::npos)
      << past.err;
  EXPECT_FALSE(fs::exists(dir / "logs" / "GN2_cpu_past"));

  // Epochs 1 and 2 at 4 steps fit the 8 left exactly: trains to the schedule's end.
  auto fits = salt("fit", {"-c", (run / "config.yaml").string(), "--ckpt_path", first_epoch.string(),
                           "--data.batch_size", "500", "--trainer.max_epochs", "3", "-ls", "fits"});
  ASSERT_EQ(fits.exit_code, 0) << fits.err;
  const auto last = training::load_checkpoint(checkpoints(dir / "logs" / "GN2_cpu_fits").back());
  EXPECT_EQ(last.global_step, 16);
  EXPECT_EQ(last.scheduler_total_steps, 16);
  EXPECT_EQ(last.scheduler_last_epoch, 16);
}

}  // namespace salt::testing
