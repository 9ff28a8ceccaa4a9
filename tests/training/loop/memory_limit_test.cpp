// salt under an address-space limit (ulimit -v, as job wrappers set it): too
// small for the CPU threads' stacks, a fit used to wait for ever inside
// LibTorch's thread pool start-up, deaf to SIGTERM; now it is one line naming
// the limit, within seconds, and no run directory. A limit that fits trains.
#include <chrono>

#include "training/fit_support.h"

namespace salt::testing {

namespace {

ProcessResult fit_under_limit(const std::filesystem::path& cwd, const std::string& kib,
                              const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/bin/bash", "-c", "ulimit -v " + kib + " && exec \"$0\" \"$@\"", salt_binary(), "fit"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, cwd, {"OMP_NUM_THREADS=1"});
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

}  // namespace salt::testing
