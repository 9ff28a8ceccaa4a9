#include "core/install_paths.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "core/errors.h"

namespace salt {
namespace fs = std::filesystem;

bool started_by_the_loader() {
  std::error_code ec;
  const auto name = fs::read_symlink("/proc/self/exe", ec).filename().string();
  if (ec) return false;
  return name.rfind("ld-", 0) == 0 || name.rfind("ld64.so", 0) == 0 || name.rfind("ld.so", 0) == 0;
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
  if (const char* env = std::getenv("SALT_SHARE_DIR"); env && *env) {
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
