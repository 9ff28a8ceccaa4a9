// `salt toydata` as a user runs it when things go wrong: bad counts (usage errors,
// exit 2), sizes that cannot fit, a full disk (a real 2 MiB tmpfs), and SIGINT /
// SIGTERM mid-write: one line on stderr, the conventional exit code, no crash, and
// no partial data set or temp file left behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "data/tiny_fs.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

int stderr_lines(const std::string& err) { return static_cast<int>(std::count(err.begin(), err.end(), '\n')); }

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

// Before: a second toydata into the same folder replaced the earlier set (a user's
// own norm dict included) without a word.
TEST(ToyDataCli, AnEarlierDataSetIsReplacedOnlyWithOverwrite) {
  TempDir dir;
  const auto out = dir / "toy";
  auto r = run_salt({"toydata", "-o", out.string(), "--num_train", "100", "--num_val", "0", "--num_test", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("wrote " + (out / "pp_output_train.h5").string() + ", " + (out / "norm_dict.yaml").string()),
            std::string::npos)
      << "names only the files it wrote: " << r.err;
  write_file(out / "norm_dict.yaml", "precious\n");
  r = run_salt({"toydata", "-o", out.string(), "--num_train", "100", "--num_val", "0", "--num_test", "0", "--seed", "7"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(stderr_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("salt toydata: " + out.string() + " already holds pp_output_train.h5, norm_dict.yaml, "
                       "class_dict.yaml (pass --overwrite to replace them"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_file(out / "norm_dict.yaml"), "precious\n");
  r = run_salt({"toydata", "-o", out.string(), "--num_train", "100", "--num_val", "0", "--num_test", "0", "--seed", "7",
                "--overwrite", "--slots", "5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_file(out / "norm_dict.yaml"), "precious\n");
  EXPECT_NE(r.err.find("warning: --slots has no effect without --config"), std::string::npos) << r.err;
}

TEST(ToyDataCli, BadCountsAreUsageErrors) {
  TempDir dir;
  for (auto flag : {"--num_train", "--num_val", "--num_test"}) {
    auto r = run_salt({"toydata", "-o", (dir / "toy").string(), flag, "-5"});
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("must be a whole number >= "), std::string::npos) << r.err;  // not CLI11's 1.8e308
    EXPECT_EQ(r.err.find("179769"), std::string::npos) << r.err;
  }
  auto r = run_salt({"toydata", "-o", (dir / "toy").string(), "--num_train", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--num_train: must be a whole number >= 1, not 0"), std::string::npos) << r.err;
  // A negative seed would wrap to 2^64 - 1 silently.
  r = run_salt({"toydata", "-o", (dir / "toy").string(), "--seed", "-1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("--seed: must be a whole number from 0 to 18446744073709551615, not '-1'"), std::string::npos)
      << r.err;
  EXPECT_TRUE(entries(dir / "toy").empty());
}

TEST(ToyDataCli, RefusesSizesBeyondTheFreeSpace) {
  TempDir dir;
  auto r = run_salt({"toydata", "-o", (dir / "toy").string(), "--num_train", "99999999999999"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(stderr_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("salt: error: the toy data set needs about ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(" free"), std::string::npos) << r.err;
  EXPECT_TRUE(entries(dir / "toy").empty());
}

TEST(ToyDataCli, FullDiskGivesOneLineAndNoFiles) {
  TinyFs tiny;
  SALT_REQUIRE_TINY_FS(tiny);
  auto r = run_salt({"toydata", "-o", (tiny / "toy").string(), "--num_train", "3000", "--num_val", "1000",
                     "--num_test", "1000"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // was 139: HDF5's atexit cleanup crashed
  EXPECT_EQ(stderr_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("salt: error: cannot write " + (tiny / "toy").string() + "/pp_output_", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(": No space left on device\n"), std::string::npos) << r.err;
  EXPECT_TRUE(tiny.entries("toy").empty()) << r.err;

  // and with room, the same command writes all five files
  TinyFs roomy("16m");
  ASSERT_TRUE(roomy.mounted());
  r = run_salt({"toydata", "-o", (roomy / "toy").string(), "--num_train", "3000", "--num_val", "1000",
                "--num_test", "1000"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(roomy.entries("toy").size(), 5u);
}

void expect_clean_stop(int sig) {
  TempDir dir;
  const auto out = dir / "toy";
  // ~2 GB if it ran to the end; stopped as soon as its first temp file exists
  BackgroundProcess p({salt::testing::salt_binary(), "toydata", "-o", out.string(), "--num_train", "5000000"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (entries(out).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(entries(out).empty()) << "toydata did not start writing";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // inside the block loop
  p.signal(sig);
  auto r = p.wait();
  EXPECT_EQ(r.exit_code, 128 + sig) << r.err;
  EXPECT_EQ(stderr_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("salt: stopped by signal " + std::to_string(sig) + " (", 0), 0u) << r.err;
  EXPECT_TRUE(entries(out).empty()) << "left behind: " << entries(out)[0];
}

TEST(ToyDataCli, SigtermStopsCleanly) { expect_clean_stop(SIGTERM); }
TEST(ToyDataCli, SigintStopsCleanly) { expect_clean_stop(SIGINT); }

}  // namespace
}  // namespace salt::testing
