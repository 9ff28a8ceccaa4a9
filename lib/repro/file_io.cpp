#include "repro/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/errors.h"

namespace salt::repro {
namespace fs = std::filesystem;

void write_file_atomic(const fs::path& path, const std::string& content) {
  // Same directory as the target, so the rename cannot cross file systems.
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  auto fail = [&](const std::string& what) {
    std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw InputError("cannot write " + path.string() + ": " + what + ": " + reason);
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError("cannot write " + path.string() + ": " + std::strerror(errno));
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      fail("write");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("fsync");
  }
  if (::close(fd) != 0) fail("close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename");
}

}  // namespace salt::repro
