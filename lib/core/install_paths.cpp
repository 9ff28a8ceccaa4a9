#include "core/install_paths.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/env_switches.h"
#include "core/errors.h"

namespace salt {
namespace fs = std::filesystem;

bool started_by_the_loader() {
  std::error_code ec;
  const auto name = fs::read_symlink("/proc/self/exe", ec).filename().string();
  if (ec) return false;
  return name.rfind("ld-", 0) == 0 || name.rfind("ld64.so", 0) == 0 || name.rfind("ld.so", 0) == 0;
}

namespace {

// The file this code was mapped from (/proc/self/maps), or empty.
std::string program_file() {
  const auto here = reinterpret_cast<std::uintptr_t>(&program_file);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    std::istringstream in(line);
    std::string range, perms, offset, device, inode, path;
    in >> range >> perms >> offset >> device >> inode >> path;
    const auto dash = range.find('-');
    if (dash == std::string::npos || path.empty() || path[0] != '/') continue;
    const auto start = std::strtoull(range.c_str(), nullptr, 16);
    const auto end = std::strtoull(range.c_str() + dash + 1, nullptr, 16);
    if (start <= here && here < end) return path;
  }
  return {};
}

}  // namespace

Launch how_started() {
  const auto program = program_file();
  struct stat exe{}, code{};
  if (program.empty() || stat("/proc/self/exe", &exe) != 0 || stat(program.c_str(), &code) != 0) return Launch::kItself;
  if (exe.st_dev == code.st_dev && exe.st_ino == code.st_ino) return Launch::kItself;
  return started_by_the_loader() ? Launch::kLoader : Launch::kOther;
}

fs::path executable_dir() {
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw UsageError("cannot read /proc/self/exe to find salt's files: " + ec.message());
  if (started_by_the_loader()) {
    // The main program's own file, as the loader opened it (its path taken at
    // start-up, before anything could change the working directory).
    static const fs::path program = [] {
      Dl_info info{};
      std::error_code e;
      if (dladdr(reinterpret_cast<void*>(&executable_dir), &info) == 0 || !info.dli_fname || !*info.dli_fname)
        return fs::path();
      return fs::canonical(info.dli_fname, e);
    }();
    if (!program.empty()) return program.parent_path();
  }
  return exe.parent_path();
}

fs::path share_dir() {
  if (const char* env = env_value("SALT_SHARE_DIR"); env && *env) {
    if (!fs::is_directory(env)) throw UsageError(std::string("SALT_SHARE_DIR=") + env + ": no such folder");
    return env;
  }
  const auto dir = executable_dir() / ".." / "share" / "salt";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw UsageError("cannot find salt's files in " + dir.lexically_normal().string() +
                     " (installed salt: <prefix>/share/salt); set SALT_SHARE_DIR to that folder");
  return fs::canonical(dir);
}

fs::path build_source_dir() {
  const auto link = share_dir() / "source";
  std::error_code ec;
  if (!fs::is_directory(link, ec))
    throw UsageError(link.string() + " is missing: tests and benches run from a build folder, not an installed salt");
  return fs::canonical(link);
}

}  // namespace salt
