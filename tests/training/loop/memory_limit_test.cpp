// salt under an address-space limit (ulimit -v, as job wrappers set it): too
// small for the CPU threads' stacks, a fit used to wait for ever inside
// LibTorch's thread pool start-up, deaf to SIGTERM; now it is one line naming
// the limit, within seconds, and no run directory. A limit that fits trains.
// One that starts the threads but not OpenBLAS's 128 MiB work buffer used to spin
// for ever in blas_memory_alloc (malloc refused, retried): now one line too.
#include <chrono>

#include "training/fit_support.h"

namespace salt::testing {

namespace {

ProcessResult salt_under_limit(const std::filesystem::path& cwd, const std::string& kib, const std::string& command,
                               const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/bin/bash", "-c", "ulimit -v " + kib + " && exec \"$0\" \"$@\"", salt_binary(), command};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, cwd, {"OMP_NUM_THREADS=1"});
}

ProcessResult fit_under_limit(const std::filesystem::path& cwd, const std::string& kib,
                              const std::vector<std::string>& args) {
  return salt_under_limit(cwd, kib, "fit", args);
}

}  // namespace

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

}  // namespace salt::testing
