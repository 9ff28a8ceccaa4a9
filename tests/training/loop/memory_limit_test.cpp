// salt under an address-space limit (ulimit -v, as job wrappers set it): too
// small for the CPU threads' stacks, a fit used to wait for ever inside
// LibTorch's thread pool start-up, deaf to SIGTERM; now it is one line naming
// the limit, within seconds, and no run directory. A limit that fits trains.
// One that starts the threads but not OpenBLAS's 128 MiB work buffer used to spin
// for ever in blas_memory_alloc (malloc refused, retried): now one line too.
// Under a cgroup memory limit (Slurm's --mem) the kernel killed a fit that
// outgrew it (exit 137, a half run directory): now it trains or stops in one line.
#include <unistd.h>

#include <chrono>
#include <fstream>

#include <yaml-cpp/yaml.h>

#include "core/cgroup.h"
#include "core/memory_limit.h"
#include "training/fit_support.h"

namespace salt::testing {

namespace {

ProcessResult salt_under_limit(const std::filesystem::path& cwd, const std::string& kib, const std::string& command,
                               const std::vector<std::string>& args, const std::string& threads = "1") {
  std::vector<std::string> argv{"/bin/bash", "-c", "ulimit -v " + kib + " && exec \"$0\" \"$@\"", salt_binary(), command};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, cwd, {"OMP_NUM_THREADS=" + threads});
}

ProcessResult fit_under_limit(const std::filesystem::path& cwd, const std::string& kib,
                              const std::vector<std::string>& args) {
  return salt_under_limit(cwd, kib, "fit", args);
}

// A memory cgroup below this process's own (the v1 memory controller's, or v2's),
// which the processes started through argv() join; removed afterwards. Needs root.
class MemoryCgroup {
 public:
  MemoryCgroup() {
    const auto own = own_cgroup_dir("/sys/fs/cgroup", "", "memory", &v2_);
    if (!own) {
      why_not_ = "no memory cgroup in /proc/self/cgroup";
      return;
    }
    dir_ = *own / ("salt-test-" + std::to_string(getpid()));
    std::error_code ec;
    std::filesystem::create_directory(dir_, ec);
    if (ec || !std::filesystem::exists(dir_ / limit_file())) {
      why_not_ = "cannot make a memory cgroup in " + own->string() + " (root and a writable cgroup file system needed)";
      dir_.clear();
    }
  }
  ~MemoryCgroup() {
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  bool usable() const { return !dir_.empty(); }
  const std::string& why_not() const { return why_not_; }
  void set_limit_mib(int mib) const { std::ofstream(dir_ / limit_file()) << (int64_t{mib} << 20) << "\n"; }
  // salt `args`, started inside the cgroup.
  std::vector<std::string> argv(const std::vector<std::string>& args) const {
    std::vector<std::string> all{"/bin/sh", "-c", "echo $$ > " + (dir_ / "cgroup.procs").string() + " && exec \"$0\" \"$@\"",
                                 salt_binary()};
    all.insert(all.end(), args.begin(), args.end());
    return all;
  }
  // The processes the kernel's out-of-memory killer has killed in it.
  int oom_kills() const {
    std::ifstream in(dir_ / (v2_ ? "memory.events" : "memory.oom_control"));
    std::string key;
    for (int64_t value; in >> key >> value;)
      if (key == "oom_kill") return static_cast<int>(value);
    return 0;
  }

 private:
  const char* limit_file() const { return v2_ ? "memory.max" : "memory.limit_in_bytes"; }
  std::filesystem::path dir_;
  bool v2_ = false;
  std::string why_not_;
};

}  // namespace

TEST_F(FitTest, UnderACgroupMemoryLimitFitAndTestTrainOrStopInOneLineNeverKilled) {
  MemoryCgroup cgroup;
  SALT_REQUIRE(cgroup.usable(), cgroup.why_not());
  ASSERT_EQ(salt("fit", small_gn2({"--trainer.max_epochs", "1"})).exit_code, 0);
  const auto run = runs().at(0);
  const auto ckpt = checkpoints(run).at(0);
  const auto files_before = std::distance(std::filesystem::recursive_directory_iterator(run), {});
  int refused = 0, trained = 0;
  // Too small for the threads (at 100 MiB the kernel used to kill the fit), for
  // OpenBLAS's buffer, for the first batches; enough.
  for (int mib : {100, 150, 250, 300, 1000}) {
    SCOPED_TRACE(std::to_string(mib) + " MiB");
    cgroup.set_limit_mib(mib);
    const auto name = "GN2_cpu_limit" + std::to_string(mib);
    const auto t0 = std::chrono::steady_clock::now();
    auto args = small_gn2({"--trainer.max_epochs", "1", "-ls", "limit" + std::to_string(mib)});
    args.insert(args.begin(), "fit");
    const auto r = run_process(cgroup.argv(args), dir.path(), {"OMP_NUM_THREADS=1"});
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
    EXPECT_EQ(cgroup.oom_kills(), 0) << r.err;
    if (r.exit_code == 0) {
      ++trained;
      EXPECT_TRUE(std::filesystem::exists(dir / "logs" / name / "metadata.yaml"));
      continue;
    }
    ++refused;
    EXPECT_EQ(r.exit_code, 1) << r.err;  // not 137: the kernel's SIGKILL
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("under a limit of " + std::to_string(mib) + " MiB (the job's cgroup memory limit)"),
              std::string::npos)
        << r.err;
    // Refused before its first step, no run directory; stopped later, its files are whole.
    if (!std::filesystem::exists(dir / "logs" / name)) continue;
    EXPECT_NO_THROW(YAML::LoadFile((dir / "logs" / name / "metadata.yaml").string()));
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir / "logs" / name))
      EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
  EXPECT_GE(refused, 1);
  EXPECT_GE(trained, 1);
  cgroup.set_limit_mib(150);
  const auto test = run_process(cgroup.argv({"test", "--ckpt_path", ckpt.string()}), dir.path(), {"OMP_NUM_THREADS=1"});
  EXPECT_EQ(test.exit_code, 1) << test.err;
  EXPECT_EQ(error_lines(test.err), 1) << test.err;
  EXPECT_NE(test.err.find("under a limit of 150 MiB (the job's cgroup memory limit)"), std::string::npos) << test.err;
  EXPECT_EQ(std::distance(std::filesystem::recursive_directory_iterator(run), {}), files_before);  // no predictions
  EXPECT_EQ(cgroup.oom_kills(), 0);
}

// data.move_files_temp in /dev/shm: the copies are memory the cgroup counts but
// RLIMIT_DATA does not. Copies that fit lower the process's cap by what they took
// (it trains, never killed); copies larger than the cgroup has free are one line
// before anything is copied, with no run directory and no copies left.
TEST_F(FitTest, TempCopiesInMemoryLowerTheCapOrAreRefusedInOneLineUnderACgroupLimit) {
  MemoryCgroup cgroup;
  SALT_REQUIRE(cgroup.usable(), cgroup.why_not());
  SALT_REQUIRE(kept_in_memory("/dev/shm"), "/dev/shm is not tmpfs here");
  const auto shm = std::filesystem::path("/dev/shm") / ("salt-test-" + std::to_string(getpid()));
  const auto fit_in_cgroup = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--trainer.max_epochs", "1", "--data.move_files_temp", shm.string()});
    auto args = small_gn2(extra);
    args.insert(args.begin(), "fit");
    return run_process(cgroup.argv(args), dir.path(), {"OMP_NUM_THREADS=1"});
  };
  cgroup.set_limit_mib(1000);
  const auto fits = fit_in_cgroup({"-ls", "fits"});
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_NE(fits.err.find("are memory the job's cgroup counts: this process now keeps within "), std::string::npos)
      << fits.err;
  EXPECT_EQ(cgroup.oom_kills(), 0);

  // Twelve names for one 60,000-jet file (~27 MiB): a wildcard input of ~330 MiB.
  make_toy_data(60000, 500, 500);
  std::filesystem::create_directories(dir / "data" / "parts");
  for (int i = 0; i < 12; ++i)
    std::filesystem::create_hard_link(dir / "data/toy/pp_output_train.h5",
                                      dir / "data" / "parts" / ("part_" + std::to_string(i) + ".h5"));
  const auto copied = 12 * std::filesystem::file_size(dir / "data/toy/pp_output_train.h5") +
                      std::filesystem::file_size(dir / "data/toy/pp_output_val.h5");
  ASSERT_GT(copied, std::uintmax_t{300} << 20);
  cgroup.set_limit_mib(300);
  const auto big = fit_in_cgroup({"-ls", "big", "--data.train_file", (dir / "data/parts/part_*.h5").string()});
  EXPECT_EQ(big.exit_code, 1) << big.err;
  EXPECT_EQ(error_lines(big.err), 1) << big.err;
  EXPECT_NE(big.err.find("salt: error: out of memory: data.move_files_temp: the copies of the training and "
                         "validation files (" + std::to_string(copied >> 20) + " MiB) do not fit in " + shm.string() +
                         ", which is kept in memory (tmpfs) and counted by the job's cgroup memory limit of 300 MiB, "
                         "with "),
            std::string::npos)
      << big.err;
  EXPECT_NE(big.err.find(" free: ask for more memory, or copy to a directory on disk"), std::string::npos) << big.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "logs" / "GN2_cpu_big"));
  EXPECT_FALSE(std::filesystem::exists(shm) && !std::filesystem::is_empty(shm));
  EXPECT_EQ(cgroup.oom_kills(), 0);
}

TEST_F(FitTest, AnAddressSpaceTooSmallForTheThreadsIsOneLineNotAHang) {
  const auto t0 = std::chrono::steady_clock::now();
  // ~585 MiB: the libraries are mapped, a thread's 8 MiB stack is not
  auto r = fit_under_limit(dir.path(), "600000", small_gn2({"--trainer.max_epochs", "1", "-ls", "tight"}));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("salt: error: cannot start CPU thread 1 of "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the address-space limit (ulimit -v) is 585 MiB: raise the limit"), std::string::npos) << r.err;
  EXPECT_TRUE(runs().empty());

  auto fits = fit_under_limit(dir.path(), "1500000", small_gn2({"--trainer.max_epochs", "1", "-ls", "fits"}));
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_EQ(runs().size(), 1u);
}

TEST_F(FitTest, ALimitTooSmallForTheBlasBuffersIsOneLineInFitAndTest) {
  ASSERT_EQ(salt("fit", small_gn2({"--trainer.max_epochs", "1"})).exit_code, 0);
  const auto ckpt = checkpoints(runs().at(0)).at(0);
  const auto files_before = std::distance(std::filesystem::recursive_directory_iterator(runs().at(0)), {});
  const auto t0 = std::chrono::steady_clock::now();
  // ~683 MiB: the threads start, a 128 MiB buffer does not fit beside the libraries
  const auto fit = fit_under_limit(dir.path(), "700000", small_gn2({"--trainer.max_epochs", "1", "-ls", "tight"}));
  const auto test = salt_under_limit(dir.path(), "700000", "test", {"--ckpt_path", ckpt.string()});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  for (const auto* r : {&fit, &test}) {
    EXPECT_EQ(r->exit_code, 1) << r->err;
    EXPECT_EQ(error_lines(r->err), 1) << r->err;
    EXPECT_NE(r->err.find("salt: error: out of memory: the BLAS work buffers (128 MiB for each of 1 CPU thread(s)) "
                          "do not fit under a limit of 683 MiB (ulimit -v)"),
              std::string::npos)
        << r->err;
  }
  EXPECT_EQ(runs().size(), 1u);
  // nothing half-written: no prediction file beside the checkpoint
  EXPECT_EQ(std::distance(std::filesystem::recursive_directory_iterator(runs().at(0)), {}), files_before);
}

// Each compute thread's GEMM takes its own buffer: two threads need two, and the
// line says so; with room for both, OpenBLAS takes them at start-up and trains.
TEST_F(FitTest, TwoThreadsNeedTwoBlasBuffersUnderALimit) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto tight = salt_under_limit(dir.path(), "900000", "fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "two"}), "2");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  EXPECT_EQ(tight.exit_code, 1) << tight.err;
  EXPECT_EQ(error_lines(tight.err), 1) << tight.err;
  EXPECT_NE(tight.err.find("the BLAS work buffers (128 MiB for each of 2 CPU thread(s)) do not fit under a limit of "
                           "878 MiB (ulimit -v)"),
            std::string::npos)
      << tight.err;
  EXPECT_TRUE(runs().empty());
  const auto roomy = salt_under_limit(dir.path(), "1500000", "fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "two"}), "2");
  EXPECT_EQ(roomy.exit_code, 0) << roomy.err;
  EXPECT_NE(roomy.err.find("computing with 2 CPU thread(s)"), std::string::npos) << roomy.err;
}

}  // namespace salt::testing
