#include "support/test_support.h"
#include "core/install_paths.h"
#include "core/remove_tree.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace salt::testing {
namespace fs = std::filesystem;

TempDir::TempDir() {
  std::random_device rd;
  auto base = fs::temp_directory_path();
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto candidate = base / ("salt-test-" + std::to_string(rd()));
    std::error_code ec;
    if (fs::create_directory(candidate, ec)) {
      path_ = candidate;
      return;
    }
  }
  throw std::runtime_error("cannot create a temporary directory under " + base.string());
}

TempDir::~TempDir() {
  std::error_code ec;
  salt::remove_tree(path_, ec);
}

void write_file(const fs::path& path, const std::string& text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ProcessResult run_process(const std::vector<std::string>& argv, const fs::path& cwd,
                          const std::vector<std::string>& extra_env) {
  // Output goes to temp files rather than pipes so a chatty child cannot deadlock.
  BackgroundProcess process(argv, cwd, extra_env);
  return process.wait();
}

ProcessResult run_salt(const std::vector<std::string>& args, const fs::path& cwd,
                       const std::vector<std::string>& extra_env) {
  std::vector<std::string> argv{salt_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, cwd, extra_env);
}

// The build folder's layout: tests/test_<concern>, app/salt, share/salt/source.
std::string salt_binary() { return (salt::executable_dir() / ".." / "app" / "salt").lexically_normal().string(); }

fs::path source_dir() { return salt::build_source_dir(); }

namespace {
// Names the binary's build: a rebuilt salt may write other toy data.
std::string binary_stamp() {
  const auto binary = salt_binary();
  const auto time = static_cast<unsigned long long>(fs::last_write_time(binary).time_since_epoch().count());
  return std::to_string(fs::file_size(binary)) + "-" + std::to_string(time);
}
}  // namespace

void write_toy_data(const fs::path& out, int train, int val, int test) {
  const auto cache = salt::executable_dir() / "toy_cache";
  fs::create_directories(cache);
  const auto stamp = "-" + binary_stamp();
  const auto made =
      cache / (std::to_string(train) + "_" + std::to_string(val) + "_" + std::to_string(test) + stamp);
  {
    struct Lock {  // released on every way out, exceptions included
      int fd;
      ~Lock() { if (fd >= 0) ::close(fd); }
    } lock{::open((cache / ".lock").c_str(), O_CREAT | O_RDWR, 0644)};
    if (lock.fd < 0 || flock(lock.fd, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + cache.string());
    if (!fs::exists(made)) {
      for (const auto& e : fs::directory_iterator(cache)) {  // made by an earlier build of salt
        const auto name = e.path().filename().string();
        const bool current = name.size() >= stamp.size() && name.compare(name.size() - stamp.size(), stamp.size(), stamp) == 0;
        if (name[0] != '.' && !current) salt::remove_tree(e.path());
      }
      const auto partial = cache / (".partial-" + std::to_string(getpid()));
      salt::remove_tree(partial);
      auto r = run_salt({"toydata", "-o", partial.string(), "--num_train", std::to_string(train), "--num_val",
                         std::to_string(val), "--num_test", std::to_string(test)});
      if (r.exit_code != 0) throw std::runtime_error("salt toydata failed: " + r.err);
      fs::rename(partial, made);
    }
  }
  fs::create_directories(out);
  fs::copy(made, out, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

int error_lines(const std::string& err) {
  int n = 0;
  std::istringstream lines(err);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind("salt: error:", 0) == 0 || line.find("terminate") != std::string::npos ||
        line.find("Exception raised from") != std::string::npos)
      ++n;
  return n;
}

}  // namespace salt::testing

namespace salt::testing {

std::string test_python() {
  const char* env = std::getenv("SALT_TEST_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

ProcessResult run_python(const std::string& script, const std::vector<std::string>& args) {
  TempDir dir;
  auto path = dir / "script.py";
  write_file(path, script);
  std::vector<std::string> argv{test_python(), path.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

bool have_python_module(const std::string& module) {
  return run_process({test_python(), "-c", "import " + module}).exit_code == 0;
}

bool skips_allowed() {
  const char* v = std::getenv("SALT_ALLOW_SKIPS");
  return v && std::string(v) == "1";
}

}  // namespace salt::testing


namespace salt::testing {

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                                     const std::vector<std::string>& extra_env) {
  dir_ = std::filesystem::temp_directory_path() / ("salt-bg-" + std::to_string(getpid()) + "-" + std::to_string(rand()));
  std::filesystem::create_directories(dir_);
  out_ = dir_ / "stdout";
  err_ = dir_ / "stderr";
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int out = open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int in = open("/dev/null", O_RDONLY);
    dup2(out, 1);
    dup2(err, 2);
    dup2(in, 0);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(127);
    for (const auto& kv : extra_env) putenv(strdup(kv.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
}

BackgroundProcess::~BackgroundProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  std::error_code ec;
  salt::remove_tree(dir_, ec);
}

void BackgroundProcess::signal(int sig) const { kill(pid_, sig); }

ProcessResult BackgroundProcess::wait() {
  int status = 0;
  waitpid(pid_, &status, 0);
  reaped_ = true;
  ProcessResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out_);
  r.err = read_file(err_);
  return r;
}

}  // namespace salt::testing
