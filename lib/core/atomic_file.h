// Writing files so that a crash, a kill or a full disk never leaves a
// half-written file under the final name: write a temp file next to it, flush,
// fsync, rename.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

namespace salt {

// Throws InputError naming the path when any step fails (the temp file is removed).
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

// fs::create_directories, but a failure (a path under a regular file, /proc, no
// permission) is an InputError naming `what` (e.g. "run directory (trainer.default_root_dir)").
void create_directories_or_fail(const std::filesystem::path& dir, const std::string& what);

// The first half of write_file_atomic, for callers that rename several files
// together: writes `content` to the new file `tmp` and fsyncs it; on failure removes
// `tmp` and throws InputError naming `shown` (the final name).
// strerror(err), and for EFBIG the file-size limit (ulimit -f) it hit: salt ignores
// SIGXFSZ (cli_main.cpp), so a write past the limit fails instead of killing it.
std::string write_error_text(int err);

void write_file_synced(const std::filesystem::path& tmp, const std::string& content, const std::filesystem::path& shown);

// InputError when `path` is a directory: an output must be a file name.
// write_file_atomic and write_via_temp check it first; a long command checks it
// before its work.
void refuse_directory_target(const std::filesystem::path& path);

// For files written by a library (HDF5): `write` fills the temp file it is given
// (temp_name_for(path)), which is then renamed to `path`. The temp file is removed
// when `write` throws (the exception goes on) or the rename fails (InputError).
void write_via_temp(const std::filesystem::path& path, const std::function<void(const std::filesystem::path&)>& write);

// A unique temp name next to `path` (same directory, so the rename is atomic):
// .<name>.tmp.<pid>.<n>.
std::filesystem::path temp_name_for(const std::filesystem::path& path);

// Removes the temp files (temp_name_for's) in `dir` and its direct subdirectories
// whose writing process is gone (killed mid-write); returns how many. Same-host pids:
// callers hold the directory (a run's locked directory), so no other host writes there.
int remove_dead_temp_files(const std::filesystem::path& dir);

// What killed writers of `target` left next to it: its temp files (temp_name_for's)
// and work directories named .<name>.<work>.<pid> (salt shuffle's buckets), whose
// process is gone. Removes them and returns how many. For outputs written outside a
// run directory (toydata, shuffle): a SIGKILL gives no chance to clean up, and a
// shuffle's buckets are as large as its data.
int remove_dead_leftovers_of(const std::filesystem::path& target);

}  // namespace salt
