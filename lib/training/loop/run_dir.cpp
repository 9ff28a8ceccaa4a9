#include "training/loop/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <regex>

#include "core/atomic_file.h"
#include "core/errors.h"

namespace salt::training {

std::string timestamp_now() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-T%H%M%S", &local);
  return buf;
}

bool ends_with_timestamp(const std::string& name) {
  static const std::regex pattern(".*_[0-9]{8}-T[0-9]{6}(_[0-9]+)?$");  // _2...: lost a same-second race
  return std::regex_match(name, pattern);
}

std::filesystem::path run_directory(const std::filesystem::path& default_root_dir, const std::string& name,
                                    const std::optional<std::string>& log_suffix, const std::string& timestamp) {
  auto root = default_root_dir.empty() ? std::filesystem::path("logs") : default_root_dir;
  // Resuming from a run's saved config: its default_root_dir is the run directory itself.
  std::error_code ec;
  if (ends_with_timestamp(root.filename().string()) || std::filesystem::exists(root / "config.yaml", ec))
    root = root.parent_path();
  return root / (name + "_" + (log_suffix ? *log_suffix : timestamp));
}

namespace {

namespace fs = std::filesystem;

// mkdir that tells "already there" (false) from a real failure (InputError).
bool make_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0777) == 0) return true;
  const int err = errno;
  std::error_code ec;
  // A link would put this run's files into another run (or anywhere else).
  if (err == EEXIST && fs::is_symlink(dir, ec))
    throw UsageError("the run directory " + dir.string() + " is a symbolic link (to " +
                     fs::read_symlink(dir, ec).string() + "); salt-cpp writes only into a directory of its own: "
                     "remove the link, or use another --name/--log_suffix");
  errno = err;
  if (errno == EEXIST && fs::is_directory(dir)) return false;
  throw InputError("cannot create the run directory " + dir.string() + ": " + std::strerror(errno));
}

}  // namespace

RunDirClaim::RunDirClaim(const fs::path& default_root_dir, const std::string& name,
                         const std::optional<std::string>& log_suffix, const std::string& timestamp,
                         bool overwrite_config) {
  const auto wanted = run_directory(default_root_dir, name, log_suffix, timestamp);
  std::error_code ec;
  for (auto p = fs::absolute(wanted).parent_path(); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    created_parents_.push_back(p);
    if (p == p.parent_path()) break;
  }
  create_directories_or_fail(wanted.parent_path(), "run directory (trainer.default_root_dir)");
  if (log_suffix) {
    dir_ = wanted;
    created_ = make_dir(dir_);
  } else {
    for (int n = 1; !created_; ++n) {
      dir_ = n == 1 ? wanted : fs::path(wanted.string() + "_" + std::to_string(n));
      created_ = make_dir(dir_);
    }
  }
  lock_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);  // never through a link
  if (lock_fd_ < 0) throw InputError("cannot open the run directory " + dir_.string() + ": " + std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    throw UsageError("run directory " + dir_.string() +
                     " is in use by another salt run (started at the same time, or still running); use another "
                     "--log_suffix (-ls) or --name");
  }
  if (!created_ && fs::exists(dir_ / "config.yaml") && !overwrite_config) {
    ::close(lock_fd_);
    throw UsageError((dir_ / "config.yaml").string() +
                     " already exists; use --overwrite_config (-oc) to reuse this run directory, or another "
                     "--name/--log_suffix");
  }
}

RunDirClaim::~RunDirClaim() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

}  // namespace salt::training
