// move_files_temp: collision-free copies, RAII cleanup, signal-path cleanup, and
// stale copies of killed runs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "core/errors.h"
#include "data/temp_copy.h"
#include "support/test_support.h"

namespace salt::data {
namespace {

namespace fs = std::filesystem;

int count_files(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) (void)e, ++n;
  return n;
}

TEST(TempCopies, CopiesDoNotCollideAndAreRemoved) {
  salt::testing::TempDir dir;
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  salt::testing::write_file(dir / "a" / "pp_output_train.h5", "train A");
  salt::testing::write_file(dir / "b" / "pp_output_train.h5", "train B");
  const fs::path scratch = dir / "shm" / "user" / "salt";  // three levels created
  {
    TempCopies t(scratch);
    fs::path ca = t.copy(dir / "a" / "pp_output_train.h5");
    fs::path cb = t.copy(dir / "b" / "pp_output_train.h5");
    TempCopies other(scratch);  // a second run in the same directory
    fs::path cc = other.copy(dir / "a" / "pp_output_train.h5");
    EXPECT_NE(ca, cb);
    EXPECT_NE(ca, cc);
    EXPECT_EQ(ca.parent_path(), fs::absolute(scratch));
    EXPECT_EQ(salt::testing::read_file(ca), "train A");
    EXPECT_EQ(salt::testing::read_file(cb), "train B");
    EXPECT_NE(ca.filename().string().find(std::to_string(getpid())), std::string::npos);
    EXPECT_EQ(ca.extension(), ".h5");
    EXPECT_EQ(other.stale_copies_removed(), 0);  // the first run is alive: untouched
    EXPECT_TRUE(fs::exists(ca));
  }
  EXPECT_FALSE(fs::exists(dir / "shm")) << "created directories are removed when empty";
}

TEST(TempCopies, KeepsDirectoriesItDidNotCreateAndCleansOnException) {
  salt::testing::TempDir dir;
  salt::testing::write_file(dir / "x.h5", "x");
  fs::create_directories(dir / "scratch");
  salt::testing::write_file(dir / "scratch" / "someone_elses.txt", "keep");
  fs::path copy;
  try {
    TempCopies t(dir / "scratch");
    copy = t.copy(dir / "x.h5");
    throw std::runtime_error("training failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(fs::exists(copy));
  EXPECT_TRUE(fs::exists(dir / "scratch" / "someone_elses.txt"));
  EXPECT_EQ(count_files(dir / "scratch"), 1);
  EXPECT_THROW(TempCopies(dir / "scratch").copy(dir / "missing.h5"), InputError);
  EXPECT_EQ(count_files(dir / "scratch"), 1) << "a failed copy leaves nothing";
}

TEST(TempCopies, SignalPathCleanup) {
  salt::testing::TempDir dir;
  salt::testing::write_file(dir / "x.h5", "x");
  TempCopies t(dir / "scratch");
  fs::path c = t.copy(dir / "x.h5");
  ASSERT_TRUE(fs::exists(c));
  cleanup_temp_copies();  // what the CLI calls after catching SIGINT/SIGTERM
  EXPECT_FALSE(fs::exists(c));
  EXPECT_FALSE(fs::exists(dir / "scratch"));
}

TEST(TempCopies, StaleCopyOfKilledRunIsRemovedAtNextStart) {
  salt::testing::TempDir dir;
  salt::testing::write_file(dir / "train.h5", std::string(1 << 16, 'x'));
  const fs::path scratch = dir / "scratch";
  int pipe_fd[2];
  ASSERT_EQ(pipe(pipe_fd), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fd[0]);
    TempCopies t(scratch);
    std::string path = t.copy(dir / "train.h5").string();
    (void)!write(pipe_fd[1], path.data(), path.size());
    close(pipe_fd[1]);
    for (;;) pause();  // until SIGKILL: no destructor runs
  }
  close(pipe_fd[1]);
  char buf[4096];
  ssize_t n = read(pipe_fd[0], buf, sizeof buf);
  close(pipe_fd[0]);
  ASSERT_GT(n, 0);
  const fs::path copy(std::string(buf, static_cast<size_t>(n)));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_TRUE(fs::exists(copy)) << "SIGKILL leaves the copy behind";

  TempCopies next(scratch);
  EXPECT_EQ(next.stale_copies_removed(), 1);
  EXPECT_FALSE(fs::exists(copy));
  // Copy and marker removed; only the mark of the directory the killed run made is left.
  EXPECT_EQ(count_files(scratch), 1);
  EXPECT_TRUE(fs::exists(scratch / ".salt-made-this-directory"));
}

TEST(TempCopies, ReusedPidIsNotAnOwner) {
  // A marker naming our (live) pid but another process start time: the pid was reused.
  salt::testing::TempDir dir;
  fs::create_directories(dir / "s");
  const std::string name = "f.salt-" + std::to_string(getpid()) + "-00000000-00000000.h5";
  salt::testing::write_file(dir / "s" / name, "old");
  salt::testing::write_file(dir / "s" / (name + ".owner"), "pid " + std::to_string(getpid()) + "\nstart 1\n");
  const std::string live = "g.salt-" + std::to_string(getpid()) + "-00000001-00000000.h5";
  salt::testing::write_file(dir / "s" / live, "live");
  salt::testing::write_file(dir / "s" / (live + ".owner"), "pid " + std::to_string(getpid()) + "\n");
  EXPECT_EQ(remove_stale_temp_copies(dir / "s"), 1);
  EXPECT_FALSE(fs::exists(dir / "s" / name));
  EXPECT_TRUE(fs::exists(dir / "s" / live));
}

}  // namespace
}  // namespace salt::data
