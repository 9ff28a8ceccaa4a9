// `salt toydata` and `salt shuffle` killed by SIGKILL (no chance to clean up), then
// run again as a user would: what the killed process left next to its outputs is
// removed, what a live process is writing is not, and the new outputs are whole.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "support/test_support.h"

namespace salt::testing {
namespace {
namespace fs = std::filesystem;

// Names in `dir` (files and folders), sorted.
std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// Waits (up to a minute) until `dir` holds an entry whose name matches `pattern`.
bool appears(const fs::path& dir, const std::string& pattern) {
  const std::regex re(pattern);
  for (int i = 0; i < 6000; ++i) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (std::regex_match(e.path().filename().string(), re)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A toydata of 2M jets into <dir>/d, sent `sig` once its training file is being written.
ProcessResult toydata_stopped_mid_write(const fs::path& dir, int sig) {
  fs::create_directories(dir / "d");
  BackgroundProcess big({salt_binary(), "toydata", "-o", "d", "--num_train", "2000000", "--num_val", "0",
                         "--num_test", "0"},
                        dir);
  EXPECT_TRUE(appears(dir / "d", R"(\.pp_output_train\.h5\.tmp\.[0-9]+\.[0-9]+)"));
  big.signal(sig);
  return big.wait();
}

TEST(KilledWriters, ToydataRunAgainRemovesWhatAKilledToydataLeft) {
  TempDir dir;
  EXPECT_EQ(toydata_stopped_mid_write(dir.path(), SIGKILL).exit_code, 128 + SIGKILL);
  const auto left = names_in(dir / "d");
  ASSERT_EQ(left.size(), 1u);  // the killed run's temp file, and nothing under an output's name
  // A live writer's temp file (this test's pid) must survive.
  const std::string alive = ".norm_dict.yaml.tmp." + std::to_string(getpid()) + ".0";
  write_file(dir / "d" / alive, "partial");

  auto r = run_salt({"toydata", "-o", "d", "--num_train", "2000", "--num_val", "500", "--num_test", "500"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("removed 1 temp file(s) left in d by killed processes"), std::string::npos) << r.err;
  EXPECT_EQ(names_in(dir / "d"), (std::set<std::string>{alive, "class_dict.yaml", "norm_dict.yaml",
                                                         "pp_output_test_ttbar.h5", "pp_output_train.h5",
                                                         "pp_output_val.h5"}));
}

// A closed terminal or ssh session (SIGHUP) stops as SIGINT and SIGTERM do: before,
// it killed toydata with its 64 MB temp file left behind.
TEST(KilledWriters, SighupStopsToydataCleanly) {
  TempDir dir;
  const auto r = toydata_stopped_mid_write(dir.path(), SIGHUP);
  EXPECT_EQ(r.exit_code, 128 + SIGHUP) << r.err;
  EXPECT_NE(r.err.find("salt: stopped by signal 1"), std::string::npos) << r.err;
  EXPECT_TRUE(names_in(dir / "d").empty()) << "left: " << *names_in(dir / "d").begin();
}

TEST(KilledWriters, ShuffleRunAgainRemovesTheKilledShufflesTempFileAndBuckets) {
  TempDir dir;
  auto r = run_salt({"toydata", "-o", "d", "--num_train", "100000", "--num_val", "0", "--num_test", "0"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A small budget: hundreds of bucket files, seconds of work to interrupt.
  BackgroundProcess shuffle({salt_binary(), "shuffle", "d/pp_output_train.h5", "-o", "d/mixed.h5", "--memory_mb", "10"},
                            dir.path());
  ASSERT_TRUE(appears(dir / "d", R"(\.mixed\.h5\.buckets\.[0-9]+)"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // some buckets written
  shuffle.signal(SIGKILL);
  EXPECT_EQ(shuffle.wait().exit_code, 128 + SIGKILL);
  const std::string buckets = ".mixed.h5.buckets." + std::to_string(shuffle.pid());
  ASSERT_TRUE(fs::is_directory(dir / "d" / buckets));
  EXPECT_FALSE(fs::exists(dir / "d" / "mixed.h5"));
  // What a live shuffle into the same output would hold: kept.
  const std::string alive = ".mixed.h5.buckets." + std::to_string(getpid());
  fs::create_directories(dir / "d" / alive);
  // A killed writer's temp output, as write_via_temp names it.
  write_file(dir / "d" / ".mixed.h5.tmp.999999999.0", "partial");

  r = run_salt({"shuffle", "d/pp_output_train.h5", "-o", "d/mixed.h5"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("removed 2 temp file(s) and bucket folder(s) left next to d/mixed.h5"), std::string::npos)
      << r.err;
  EXPECT_EQ(names_in(dir / "d"), (std::set<std::string>{alive, "class_dict.yaml", "mixed.h5", "norm_dict.yaml",
                                                         "pp_output_train.h5"}));
}

}  // namespace
}  // namespace salt::testing
