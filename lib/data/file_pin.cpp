#include "data/file_pin.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "core/errors.h"

namespace salt::data {

namespace {

bool same_time(const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

}  // namespace

FilePin::FilePin(std::filesystem::path path) : path_(std::move(path)) {
  if (::stat(path_.c_str(), &pinned_) != 0)
    throw InputError(fmt::format("cannot stat input file {}: {}", path_.string(), std::strerror(errno)));
}

void FilePin::check() const {
  struct stat now {};
  std::string what;
  if (::stat(path_.c_str(), &now) != 0)
    what = fmt::format("it is gone: {}", std::strerror(errno));
  else if (now.st_dev != pinned_.st_dev || now.st_ino != pinned_.st_ino)
    what = "replaced by another file";
  else if (now.st_size != pinned_.st_size)
    what = fmt::format("size {} -> {} bytes", pinned_.st_size, now.st_size);
  else if (!same_time(now.st_mtim, pinned_.st_mtim))
    what = "modified (same size, new modification time)";
  if (!what.empty())
    throw InputError(fmt::format("input file {} changed during the run ({}); stopped so that no epoch trains on it "
                                 "(the checkpoints so far are kept)",
                                 path_.string(), what));
}

}  // namespace salt::data
