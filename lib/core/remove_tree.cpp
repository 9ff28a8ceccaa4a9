#include "core/remove_tree.h"

#include <ftw.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

namespace salt {

namespace {

// nftw's callback: with FTW_DEPTH a directory comes after its contents, so it is
// empty by the time remove(3) sees it.
int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  return std::remove(path) == 0 || errno == ENOENT ? 0 : errno;
}

}  // namespace

bool remove_tree(const std::filesystem::path& path, std::error_code& ec) {
  ec.clear();
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    ec.assign(errno, std::generic_category());
    return false;
  }
  // Few open descriptors (16): deep trees are walked anyway, only slower.
  const int rc = ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  if (rc == 0) return true;
  ec.assign(rc > 0 ? rc : errno, std::generic_category());
  return false;
}

void remove_tree(const std::filesystem::path& path) {
  std::error_code ec;
  if (!remove_tree(path, ec)) throw std::filesystem::filesystem_error("cannot remove", path, ec);
}

}  // namespace salt
