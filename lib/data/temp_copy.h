// data.move_files_temp: read training files from copies in a fast scratch directory
// (e.g. /dev/shm/<user>/salt), and never leave those copies behind.
//
// - Copies get collision-free names: <stem>.salt-<pid>-<random>-<hash of source path><ext>,
//   so two runs (or two users of one directory) never share or delete each other's copy.
// - Next to each copy an owner marker (<copy>.owner: pid, process start time, source)
//   is written BEFORE copying. At start, copies whose owner process is gone (killed
//   with SIGKILL, node crash...) are removed: stale_copies_removed() reports them.
// - The TempCopies object removes its copies and their markers on destruction, also
//   during stack unwinding; directories a TempCopies created carry a mark and are
//   removed by whichever process leaves them empty (with several ranks sharing one
//   directory, the last to finish, not necessarily the one that made it).
// - cleanup_temp_copies() removes every live copy of this process: the CLI calls it
//   from its main thread after catching SIGINT/SIGTERM (it is not async-signal-safe).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace salt::data {

class TempCopies {
 public:
  // Creates `dir` (and missing parents, remembered for removal) and removes stale copies
  // left there by dead processes.
  explicit TempCopies(const std::filesystem::path& dir);
  ~TempCopies();
  TempCopies(const TempCopies&) = delete;
  TempCopies& operator=(const TempCopies&) = delete;

  // Copies `source` into the directory and returns the copy's path. InputError on failure
  // (nothing is left behind).
  std::filesystem::path copy(const std::filesystem::path& source);
  // A collision-free name in the directory for a file the caller writes (e.g. a
  // virtual file over copies), named after `source`, owned and removed like a copy.
  std::filesystem::path reserve(const std::filesystem::path& source);
  // Removes the copies, markers and, once empty, marked directories now (idempotent).
  void cleanup();

  const std::filesystem::path& dir() const { return dir_; }
  const std::vector<std::filesystem::path>& copies() const { return copies_; }
  int stale_copies_removed() const { return stale_removed_; }

 private:
  std::filesystem::path dir_;
  std::vector<std::filesystem::path> created_dirs_;  // deepest last
  std::vector<std::filesystem::path> copies_;
  int stale_removed_ = 0;
};

// Removes every copy made by live TempCopies objects of this process.
void cleanup_temp_copies();
// Removes copies in `dir` whose owner process is dead; returns how many.
int remove_stale_temp_copies(const std::filesystem::path& dir);

}  // namespace salt::data
