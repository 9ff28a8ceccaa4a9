// A real small filesystem for disk-full tests: a tmpfs of a few MiB mounted on a
// fresh directory (needs root / CAP_SYS_ADMIN; tests fail otherwise, see SALT_REQUIRE) and
// unmounted on destruction. fill() leaves only a few KiB free.
#pragma once
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "support/test_support.h"

namespace salt::testing {

class TinyFs {
 public:
  explicit TinyFs(const std::string& size = "2m") : mount_point_(dir_ / "fs") {
    std::filesystem::create_directories(mount_point_);
    const std::string opts = "size=" + size + ",mode=0755";
    if (::mount("tmpfs", mount_point_.c_str(), "tmpfs", 0, opts.c_str()) == 0)
      mounted_ = true;
    else
      why_not_ = std::string("cannot mount a tmpfs here (") + std::strerror(errno) + "): needs root";
  }
  ~TinyFs() {
    if (mounted_) ::umount2(mount_point_.c_str(), MNT_DETACH);
  }
  TinyFs(const TinyFs&) = delete;
  TinyFs& operator=(const TinyFs&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& why_not() const { return why_not_; }
  const std::filesystem::path& path() const { return mount_point_; }
  std::filesystem::path operator/(const std::string& name) const { return mount_point_ / name; }

  // Writes a filler file so that only about `leave` bytes stay free.
  void fill(std::uintmax_t leave) {
    const auto avail = std::filesystem::space(mount_point_).available;
    std::ofstream out(mount_point_ / "filler", std::ios::binary);
    std::string block(4096, 'x');
    for (std::uintmax_t n = 0; n + leave + block.size() <= avail; n += block.size()) out << block;
  }

  // Entries other than the filler.
  std::vector<std::string> entries(const std::filesystem::path& sub = {}) const {
    std::vector<std::string> out;
    const auto dir = sub.empty() ? mount_point_ : mount_point_ / sub;
    if (!std::filesystem::exists(dir)) return out;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().filename() != "filler") out.push_back(e.path().filename().string());
    return out;
  }

 private:
  TempDir dir_;
  std::filesystem::path mount_point_;
  bool mounted_ = false;
  std::string why_not_;
};

// Runs `fn` in a forked child and returns what it returned ("crashed" if it died).
// For code that hits a full disk in-process: HDF5 1.10 leaves a failed H5Fclose's
// (or H5Dclose's) ID dangling in its tables, and later calls that walk them (e.g.
// H5Zunregister) crash, so such code must not share a process with other tests.
inline std::string in_child(const std::function<std::string()>& fn) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string r = fn();
    ssize_t ignored = ::write(fds[1], r.data(), r.size());
    (void)ignored;
    ::_exit(0);  // no atexit handlers, no static destructors
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "crashed: " + out;
}

#define SALT_REQUIRE_TINY_FS(fs) SALT_REQUIRE((fs).mounted(), (fs).why_not())

}  // namespace salt::testing
