#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/errors.h"

namespace salt {

std::filesystem::path temp_name_for(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  auto name = "." + path.filename().string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  return path.parent_path() / name;
}

void create_directories_or_fail(const std::filesystem::path& dir, const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("cannot create the " + what + " " + dir.string() + ": " + ec.message());
}

void write_file_synced(const std::filesystem::path& tmp, const std::string& content,
                       const std::filesystem::path& shown) {
  auto fail = [&](int err) {
    ::unlink(tmp.c_str());
    throw InputError(shown.string() + ": cannot write (" + std::strerror(err) + ")");
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(shown.string() + ": cannot write (" + std::strerror(errno) + ")");
  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      fail(err);
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) fail(errno);
}

void write_file_atomic(const std::filesystem::path& path, const std::string& content) {
  auto tmp = temp_name_for(path);
  write_file_synced(tmp, content, path);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(path.string() + ": cannot rename the finished file into place (" + std::strerror(err) + ")");
  }
}

}  // namespace salt
