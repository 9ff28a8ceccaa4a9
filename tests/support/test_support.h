// Shared helpers for the test suites: scratch directories and running the real
// `salt` binary as a user would.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace salt::testing {

// A fresh directory under $TMPDIR, removed (with its contents) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

void write_file(const std::filesystem::path& path, const std::string& text);
std::string read_file(const std::filesystem::path& path);

struct ProcessResult {
  int exit_code = -1;  // exit status, or 128 + signal number
  std::string out;
  std::string err;
};

// Runs argv[0] with the given arguments (no shell), in `cwd` if non-empty, with
// extra environment entries "KEY=VALUE" added to the current environment.
ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& cwd = {},
                          const std::vector<std::string>& extra_env = {});

// Runs the `salt` binary built alongside the tests.
ProcessResult run_salt(const std::vector<std::string>& args, const std::filesystem::path& cwd = {},
                       const std::vector<std::string>& extra_env = {});

// The `salt` binary of the build folder the tests were built in.
std::string salt_binary();

// What `salt toydata -o <out> --num_train T --num_val V --num_test E` writes, made
// once per sizes and per build of `salt` (kept in <build>/tests/toy_cache, made
// under a lock, so parallel tests share it) and copied into `out`. Throws
// std::runtime_error with salt's message when toydata fails.
void write_toy_data(const std::filesystem::path& out, int train, int val, int test);

// The repository root the build folder was configured from (for configs/ and fixtures).
std::filesystem::path source_dir();

// How many lines of `err` report an error ("salt: error: ..." or a crash's
// "terminate ..."): a bad input must give exactly one, and no stack trace.
int error_lines(const std::string& err);

}  // namespace salt::testing

namespace salt::testing {

// Debian's /usr/bin/python3 with python3-torch and python3-h5py (installed by
// scripts/bootstrap.sh), or $SALT_TEST_PYTHON (the GPU machine's python3): tests
// cross-check our output against the real PyTorch and h5py. Runs `script` with
// `args`; the result carries its stdout/stderr.
std::string test_python();
ProcessResult run_python(const std::string& script, const std::vector<std::string>& args = {});
bool have_python_module(const std::string& module);

// Whether a test may skip when a prerequisite is missing: only with
// SALT_ALLOW_SKIPS=1 (a machine known to lack one, e.g. the GPU machine).
bool skips_allowed();

}  // namespace salt::testing

// A test's prerequisite (a Python module for a cross-check, root for a tmpfs, a
// Slurm cluster): without it the test fails, so CI cannot pass with a check
// silently gone (scripts/bootstrap.sh installs them all); SALT_ALLOW_SKIPS=1
// skips instead.
#define SALT_REQUIRE(ok, what)                                                                      \
  if (ok) {                                                                                          \
  } else if (::salt::testing::skips_allowed())                                                      \
    GTEST_SKIP() << "SKIP: " << what;                                                                \
  else                                                                                               \
    FAIL() << "missing prerequisite: " << what << " (SALT_ALLOW_SKIPS=1 skips tests that need it)"

namespace salt::testing {

// A process started in the background (stdout/stderr to files), for tests that
// signal or kill it. wait() reaps it; the destructor kills it if still running.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::filesystem::path& cwd = {},
                    const std::vector<std::string>& extra_env = {});
  ~BackgroundProcess();
  int pid() const { return pid_; }
  void signal(int sig) const;
  ProcessResult wait();  // exit code (128 + signal when killed) and output

 private:
  int pid_ = -1;
  std::filesystem::path dir_, out_, err_;
  bool reaped_ = false;
};

}  // namespace salt::testing
