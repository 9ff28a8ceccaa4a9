// An input file pinned for a run: its identity (device, inode), size and
// modification time when the run opened it. A training file truncated by a quota,
// overwritten by a copy still being written, or replaced while a fit runs would
// otherwise feed later epochs fewer or garbage rows without an error.
#pragma once
#include <sys/stat.h>

#include <filesystem>
#include <string>

namespace salt::data {

class FilePin {
 public:
  // Records the file's state now; InputError if it cannot be stat'ed.
  explicit FilePin(std::filesystem::path path);
  // InputError "<path> changed during the run (<what changed>)" when it is no
  // longer the same file with the same size and modification time.
  void check() const;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  struct stat pinned_ {};
};

}  // namespace salt::data
