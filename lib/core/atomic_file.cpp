#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <regex>

#include "core/errors.h"
#include "core/process.h"
#include "core/remove_tree.h"

namespace salt {

std::filesystem::path temp_name_for(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  auto name = "." + path.filename().string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  return path.parent_path() / name;
}

namespace {

int remove_dead_in(const std::filesystem::path& dir) {
  static const std::regex temp_file(R"(\..+\.tmp\.([0-9]{1,9})\.[0-9]+)");
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::smatch m;
    const auto name = entry.path().filename().string();
    if (!entry.is_regular_file(ec) || !std::regex_match(name, m, temp_file) || process_alive(std::stol(m[1])))
      continue;
    if (std::filesystem::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

}  // namespace

int remove_dead_temp_files(const std::filesystem::path& dir) {
  int removed = remove_dead_in(dir);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_directory(ec)) removed += remove_dead_in(entry.path());
  return removed;
}

int remove_dead_leftovers_of(const std::filesystem::path& target) {
  // .<name>.tmp.<pid>.<n> (a file) or .<name>.<work>.<pid> (a directory)
  static const std::regex leftover(R"(\.tmp\.([0-9]{1,9})\.[0-9]+|\.[a-z]+\.([0-9]{1,9}))");
  const std::string prefix = "." + target.filename().string();
  const auto dir = target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path();
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const auto name = entry.path().filename().string();
    std::smatch m;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    if (!std::regex_match(rest, m, leftover)) continue;
    const bool file = m[1].matched;
    if (file ? !entry.is_regular_file(ec) : !entry.is_directory(ec)) continue;
    if (entry.is_symlink(ec) || process_alive(std::stol(file ? m[1].str() : m[2].str()))) continue;
    if (file ? std::filesystem::remove(entry.path(), ec) : remove_tree(entry.path(), ec)) ++removed;
  }
  return removed;
}

void create_directories_or_fail(const std::filesystem::path& dir, const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("cannot create the " + what + " " + dir.string() + ": " + ec.message());
}

std::string write_error_text(int err) {
  std::string why = std::strerror(err);
  rlimit fsize{};
  if (err == EFBIG && getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY)
    why += ": the file-size limit (ulimit -f) is " + std::to_string(fsize.rlim_cur >> 10) + " KiB";
  return why;
}

void write_file_synced(const std::filesystem::path& tmp, const std::string& content,
                       const std::filesystem::path& shown) {
  auto fail = [&](int err) {
    ::unlink(tmp.c_str());
    throw InputError(shown.string() + ": cannot write (" + write_error_text(err) + ")");
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
  refuse_directory_target(path);
  auto tmp = temp_name_for(path);
  write_file_synced(tmp, content, path);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(path.string() + ": cannot rename the finished file into place (" + std::strerror(err) + ")");
  }
}

void refuse_directory_target(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status))
    throw InputError(path.string() + " is a directory: give the name of the file to write");
  // Renaming over /dev/null or a FIFO would replace the node itself (as root, a device).
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw InputError(path.string() + " is not a regular file (a device, FIFO or socket): give the name of a file "
                                     "to write");
}

void write_via_temp(const std::filesystem::path& path, const std::function<void(const std::filesystem::path&)>& write) {
  refuse_directory_target(path);
  const auto tmp = temp_name_for(path);
  std::error_code ec;
  try {
    write(tmp);
  } catch (...) {
    std::filesystem::remove(tmp, ec);
    throw;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const auto why = ec.message();  // before remove() reuses ec ("cannot write odir: Success")
    std::filesystem::remove(tmp, ec);
    throw InputError("cannot write " + path.string() + ": " + why);
  }
}

}  // namespace salt
