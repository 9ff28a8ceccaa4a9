#include "data/temp_copy.h"

#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

#include "core/errors.h"
#include "core/process.h"

namespace salt::data {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMarkerSuffix = ".owner";
// In each directory a TempCopies created: whoever leaves it empty last (with
// several ranks, not necessarily its creator) removes it.
constexpr const char* kMadeBySalt = ".salt-made-this-directory";

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::set<TempCopies*>& registry() {
  static std::set<TempCopies*> r;
  return r;
}

std::string random_token() {
  std::random_device rd;
  return fmt::format("{:08x}", rd());
}

// Bytes a non-root writer can still put in the file system of `dir` (0 if unknown).
uintmax_t free_bytes(const fs::path& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return 0;
  return static_cast<uintmax_t>(st.f_bavail) * st.f_frsize;
}

std::string megabytes(uintmax_t bytes) { return fmt::format("{:.0f} MB", static_cast<double>(bytes) / 1e6); }

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

}  // namespace

int remove_stale_temp_copies(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  int removed = 0;
  std::vector<fs::path> markers;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > std::strlen(kMarkerSuffix) && name.find(".salt-") != std::string::npos &&
        name.compare(name.size() - std::strlen(kMarkerSuffix), std::string::npos, kMarkerSuffix) == 0)
      markers.push_back(entry.path());
  }
  for (const auto& marker : markers) {
    long pid = 0;
    unsigned long long start = 0;
    std::ifstream in(marker);
    std::string key;
    while (in >> key) {
      if (key == "pid") in >> pid;
      else if (key == "start") in >> start;
      else in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    if (pid == 0) {
      // Marker not readable yet (or truncated by a kill): fall back on the pid in the name.
      const std::string name = marker.filename().string();
      auto at = name.find(".salt-");
      if (at != std::string::npos) pid = std::atol(name.c_str() + at + 6);
    }
    if (process_alive(pid, start)) continue;
    fs::path copy = marker;
    copy.replace_extension();  // strip ".owner"
    remove_quietly(copy);
    remove_quietly(marker);
    ++removed;
  }
  return removed;
}

TempCopies::TempCopies(const fs::path& dir) : dir_(fs::absolute(dir)) {
  // Remember which directories we create, so that only those are removed later.
  std::vector<fs::path> missing;
  for (fs::path p = dir_; !p.empty() && !fs::exists(p); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    throw InputError(fmt::format("Cannot create data.move_files_temp directory {}: {}", dir_.string(), ec.message()));
  created_dirs_.assign(missing.rbegin(), missing.rend());
  for (const auto& made : created_dirs_) std::ofstream(made / kMadeBySalt).flush();
  stale_removed_ = remove_stale_temp_copies(dir_);
  std::lock_guard<std::mutex> lk(registry_mutex());
  registry().insert(this);
}

TempCopies::~TempCopies() {
  {
    std::lock_guard<std::mutex> lk(registry_mutex());
    registry().erase(this);
  }
  cleanup();
}

fs::path TempCopies::copy(const fs::path& source) {
  std::error_code ec;
  if (!fs::is_regular_file(source, ec)) throw InputError(fmt::format("Cannot copy {}: not a file", source.string()));
  const fs::path abs = fs::absolute(source);
  // A full scratch file system (tmpfs) fails mid-copy with errors that do not say
  // why (EIO, ENOSPC): check the room first and name it.
  const uintmax_t size = fs::file_size(abs, ec), room = free_bytes(dir_);
  auto no_space = [&] {
    return InputError(fmt::format("data.move_files_temp: no space for {} ({}) in {}: {} free", abs.string(),
                                  megabytes(size), dir_.string(), megabytes(room)));
  };
  if (!ec && room > 0 && size > room) throw no_space();
  const fs::path target = reserve(abs);
  fs::path marker = target;
  marker += kMarkerSuffix;
  fs::copy_file(abs, target, fs::copy_options::overwrite_existing, ec);
  if (ec) {
    remove_quietly(target);
    remove_quietly(marker);
    copies_.pop_back();
    if (ec.value() == ENOSPC || free_bytes(dir_) < size) throw no_space();  // filled while copying
    throw InputError(fmt::format("Cannot copy {} to {}: {}", abs.string(), target.string(), ec.message()));
  }
  return target;
}

fs::path TempCopies::reserve(const fs::path& source) {
  const fs::path abs = fs::absolute(source);
  std::error_code ec;
  const size_t hash = std::hash<std::string>{}(abs.lexically_normal().string());
  const fs::path target =
      dir_ / fmt::format("{}.salt-{}-{}-{:08x}{}", abs.stem().string(), static_cast<long>(getpid()), random_token(),
                         static_cast<uint32_t>(hash), abs.extension().string());
  fs::path marker = target;
  marker += kMarkerSuffix;
  {
    // The marker comes first: a run killed while copying still leaves a claim that
    // the next run can check and clean up.
    fs::path tmp = marker;
    tmp += ".tmp";
    std::ofstream out(tmp);
    out << "pid " << getpid() << "\nstart " << process_start(getpid()) << "\nsource " << abs.string() << "\n";
    out.close();
    fs::rename(tmp, marker, ec);
    if (!out || ec) {
      remove_quietly(tmp);
      throw InputError(fmt::format("Cannot write in data.move_files_temp directory {}", dir_.string()));
    }
  }
  copies_.push_back(target);
  return target;
}

void TempCopies::cleanup() {
  for (const auto& c : copies_) {
    remove_quietly(c);
    fs::path marker = c;
    marker += kMarkerSuffix;
    remove_quietly(marker);
  }
  copies_.clear();
  // Directories a TempCopies created (this one or another rank's), deepest first,
  // once nothing but the mark is left in them.
  std::error_code ec;
  for (fs::path d = dir_; fs::exists(d / kMadeBySalt, ec); d = d.parent_path()) {
    auto it = fs::directory_iterator(d, ec);
    bool only_mark = !ec;
    for (; only_mark && it != fs::directory_iterator(); it.increment(ec))
      only_mark = !ec && it->path().filename() == kMadeBySalt;
    if (!only_mark) break;
    remove_quietly(d / kMadeBySalt);
    if (!fs::remove(d, ec)) break;
  }
  created_dirs_.clear();
}

void cleanup_temp_copies() {
  std::lock_guard<std::mutex> lk(registry_mutex());
  for (TempCopies* t : registry()) t->cleanup();
}

}  // namespace salt::data
