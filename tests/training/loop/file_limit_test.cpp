// salt under a file-size limit (ulimit -f, as job wrappers set it): SIGXFSZ used
// to kill a fit in the middle of writing a checkpoint (exit 153) and leave the
// half-written temporary file. Now a write past the limit fails, the file goes,
// and the error is one line naming the limit, in fit and test alike.
#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

ProcessResult salt_under_file_limit(const fs::path& cwd, const std::string& kib, std::vector<std::string> args) {
  std::vector<std::string> argv{"/bin/bash", "-c", "ulimit -f " + kib + " && exec \"$0\" \"$@\"", salt_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, cwd, {"OMP_NUM_THREADS=1"});
}

int temp_files(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) n += e.path().filename().string().find(".tmp") != std::string::npos;
  return n;
}

}  // namespace

TEST_F(FitTest, AFileSizeLimitIsOneLineNamingItAndLeavesNoHalfWrittenFile) {
  // ~1 MiB checkpoints: the first one passes the 200 KiB limit
  auto args = small_gn2({"--trainer.max_epochs", "1", "-ls", "small"});
  args.insert(args.begin(), "fit");
  const auto fit = salt_under_file_limit(dir.path(), "200", args);
  EXPECT_EQ(fit.exit_code, 1) << fit.err;  // not 153, SIGXFSZ's
  EXPECT_EQ(error_lines(fit.err), 1) << fit.err;
  EXPECT_NE(fit.err.find(".ckpt: cannot write (File too large: the file-size limit (ulimit -f) is 200 KiB)"),
            std::string::npos)
      << fit.err;
  EXPECT_EQ(temp_files(dir / "logs"), 0);

  ASSERT_EQ(salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "free"})).exit_code, 0);
  const auto ckpt = checkpoints(dir / "logs" / "GN2_cpu_free").at(0);
  const auto test = salt_under_file_limit(dir.path(), "10", {"test", "--ckpt_path", ckpt.string()});  // ~24 KiB of predictions
  EXPECT_EQ(test.exit_code, 1) << test.err;
  EXPECT_EQ(error_lines(test.err), 1) << test.err;
  EXPECT_NE(test.err.find("_test_ttbar.h5: File too large: the file-size limit (ulimit -f) is 10 KiB"), std::string::npos)
      << test.err;
  EXPECT_EQ(temp_files(dir / "logs"), 0);
  for (const auto& e : fs::directory_iterator(ckpt.parent_path()))
    EXPECT_NE(e.path().extension(), ".h5") << e.path();
}

}  // namespace salt::testing
