#include "core/path_join.h"

#include "core/errors.h"

namespace salt {

std::filesystem::path join_below(const std::filesystem::path& base, const std::string& name, const std::string& what) {
  if (name.empty()) return base;
  const std::filesystem::path relative(name);
  bool climbs = false;
  for (const auto& part : relative)
    if (part == "..") climbs = true;
  if (relative.is_absolute() || relative.has_root_name() || climbs || name.find('\0') != std::string::npos)
  {
    std::string shown;  // a NUL would end the message's C string
    for (char c : name) shown += c == '\0' ? std::string("\\0") : std::string(1, c);
    throw UsageError(what + " '" + shown + "' must name a folder below " + base.string() +
                     " (not an absolute path, no '..')");
  }
  return base / relative;
}

}  // namespace salt
