#include "core/temp_dir.h"

#include <cstdlib>
#include <string>

#include "core/errors.h"

namespace salt {

std::filesystem::path temp_directory() {
  for (const char* name : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"}) {
    const char* value = std::getenv(name);
    if (!value || !*value) continue;
    std::error_code ec;
    if (!std::filesystem::is_directory(value, ec))
      throw InputError(std::string(name) + "=" + value + ": no such folder for temporary files (make it, or point " +
                       name + " at one)");
    return value;
  }
  return "/tmp";
}

}  // namespace salt
